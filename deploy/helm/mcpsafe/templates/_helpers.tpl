{{- define "mcpsafe.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{- define "mcpsafe.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "mcpsafe.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "mcpsafe.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* The approval service's in-cluster address, which the gateway's webhook calls. */}}
{{- define "mcpsafe.approvalsHost" -}}
{{- printf "%s-approvals.%s.svc" (include "mcpsafe.fullname" .) .Release.Namespace -}}
{{- end -}}

{{/* PGPASSWORD from a secret, when a postgres URL is used. */}}
{{- define "mcpsafe.pgpassword" -}}
{{- if and (hasPrefix "postgres" .url) .secret.name }}
- name: PGPASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .secret.name }}
      key: {{ .secret.key }}
{{- end }}
{{- end -}}
