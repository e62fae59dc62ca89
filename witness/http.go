package witness

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/mcpsafe/mcpsafe/journal"
)

// Handler serves the witness's API, every route behind a bearer token:
//
//	POST /checkpoints          a signed checkpoint note (at most journal.MaxCheckpointNote bytes):
//	                           201 stored, 200 already held, 401, 403 not signed by a trusted key,
//	                           400 not a checkpoint, 409 a fork, rollback or other key (kept as
//	                           evidence), 413 too large, 503/507 not stored
//	GET  /checkpoints/{id}     the notes held for journal id (text/plain; empty when none)
//	GET  /checkpoints          what is held, per journal (JSON)
func (s *Server) Handler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("POST "+journal.WitnessCheckpointsPath, s.withBearer(s.submit))
	m.HandleFunc("GET "+journal.WitnessCheckpointsPath+"/{id}", s.withBearer(s.notes))
	m.HandleFunc("GET "+journal.WitnessCheckpointsPath, s.withBearer(s.list))
	return m
}

func (s *Server) withBearer(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		who, ok := s.authorized(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcpsafe witness"`)
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "bearer token required"})
			return
		}
		h(w, r, who)
	}
}

func (s *Server) submit(w http.ResponseWriter, r *http.Request, who string) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, journal.MaxCheckpointNote))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"error": fmt.Sprintf("a checkpoint is at most %d bytes", journal.MaxCheckpointNote)})
			return
		}
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "reading the body: " + err.Error()})
		return
	}
	res, err := s.Submit(body, who)
	if err != nil {
		var ref *Refusal
		if !errors.As(err, &ref) {
			ref = &Refusal{Status: http.StatusInternalServerError, Kind: RefusedBroken, Reason: err.Error()}
		}
		writeJSON(w, ref.Status, map[string]any{"error": ref.Reason, "kind": ref.Kind})
		return
	}
	status, word := http.StatusOK, "already witnessed"
	if res.Stored {
		status, word = http.StatusCreated, "stored"
	}
	writeJSON(w, status, map[string]any{"status": word, "journal": res.Checkpoint.Journal, "seq": res.Checkpoint.Seq})
}

func (s *Server) notes(w http.ResponseWriter, r *http.Request, _ string) {
	b, err := s.Notes(r.PathValue("id"))
	if err != nil {
		status := http.StatusInternalServerError
		if !isID(r.PathValue("id")) {
			status = http.StatusBadRequest
		}
		writeJSON(w, status, map[string]any{"error": err.Error()})
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

func (s *Server) list(w http.ResponseWriter, _ *http.Request, _ string) {
	writeJSON(w, http.StatusOK, map[string]any{"journals": s.List()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// LoadTokens reads a bearer token file: one token per line (blank lines
// and lines starting with # are skipped), each at least MinTokenLen long,
// the file private to its owner.
func LoadTokens(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("witness: tokens: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("witness: token file %s is readable by group or others (mode %v); chmod 600 it", path, fi.Mode().Perm())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("witness: tokens: %w", err)
	}
	defer f.Close()
	var toks []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if len(t) < MinTokenLen || strings.ContainsAny(t, " \t") {
			return nil, fmt.Errorf("witness: %s line %d: a token is one word of at least %d characters (e.g. head -c 32 /dev/urandom | base64)", path, n, MinTokenLen)
		}
		toks = append(toks, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("witness: tokens: %w", err)
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("witness: %s holds no token", path)
	}
	return toks, nil
}
