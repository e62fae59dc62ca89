// Package files provides the tools of `mcpsafe files`: delete_file and
// move_file behind the gate, and read-only list_directory and file_info,
// all confined to roots fixed at startup.
//
// Every gated call is resolved to the real file (device, inode, type, size,
// times, link count, content digest) before anyone is asked; the gate binds
// that state into the approval and resolves again right before execute, and
// safefs re-checks it once more on the open file descriptor before it
// unlinks or renames. Requests outside the roots, through symlinks, or at
// anything but a regular file are refused before any prompt is shown.
//
// Plans travel through the model, which has no tool to read a file's
// content, so they never carry the content digest: they show a short
// fingerprint keyed by the gate's key file (see fingerprint), and only the resolved
// state the approval binds (fileState) holds the full digest.
package files

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/prompt"
	"github.com/mcpsafe/mcpsafe/safefs"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool-specific reason codes, next to the gate's own.
const (
	ReasonOutsideRoots      = "outside_roots"
	ReasonNotARegularFile   = "not_a_regular_file"
	ReasonNotFound          = "not_found"
	ReasonDestinationExists = "destination_exists"
	ReasonInvalidPath       = mcpsafe.ReasonInvalidPath
)

// Tool names.
const (
	DeleteFile    = "delete_file"
	MoveFile      = "move_file"
	ListDirectory = "list_directory"
	FileInfo      = "file_info"
)

// Register adds the four file tools to server: the two that change files
// through gate, the two read-only ones directly.
func Register(server *mcp.Server, gate *mcpsafe.Gate, fsys *safefs.FS) error {
	return register(server, gate, fsys, Grants{})
}

func register(server *mcp.Server, gate *mcpsafe.Gate, fsys *safefs.FS, grants Grants) error {
	t := &tools{fs: fsys, gate: gate}
	del, move := t.deleteTool(), t.moveTool()
	del.Grants, move.Grants = grants.policy(DeleteFile), grants.policy(MoveFile)
	if err := mcpsafe.Register(gate, server, del); err != nil {
		return err
	}
	if err := mcpsafe.Register(gate, server, move); err != nil {
		return err
	}
	pathSchema, err := jsonschema.For[pathArgs](nil)
	if err != nil {
		return err
	}
	// Reading twice changes nothing: idempotent too (the SDK would send
	// idempotentHint: false otherwise).
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}
	server.AddTool(&mcp.Tool{
		Name:        ListDirectory,
		Description: "List a directory inside the allowed roots. Symlinks are shown, never followed.",
		InputSchema: pathSchema,
		Annotations: readOnly,
	}, readOnlyHandler(t.list))
	server.AddTool(&mcp.Tool{
		Name:        FileInfo,
		Description: "Describe a file inside the allowed roots: type, size, modification time, hard links.",
		InputSchema: pathSchema,
		Annotations: readOnly,
	}, readOnlyHandler(t.info))
	return nil
}

type tools struct {
	fs *safefs.FS
	// gate keys the content fingerprints plans show (Gate.Mark): see
	// fingerprint.
	gate *mcpsafe.Gate
}

type pathArgs struct {
	Path string `json:"path" jsonschema:"the file's path: absolute inside a root, or relative to the first root"`
}

type moveArgs struct {
	Source      string `json:"source" jsonschema:"the file to move"`
	Destination string `json:"destination" jsonschema:"the new path; it must not exist yet"`
}

// refusal maps a safefs error to a reason code. A symlink is reported as
// outside_roots when it (or a link on its way) would lead out of the roots,
// else as not_a_regular_file; either way it is never followed to act.
func (t *tools) refusal(path string, err error) error {
	switch {
	case errors.Is(err, safefs.ErrChanged):
		return mcpsafe.Refuse(mcpsafe.ReasonTargetChanged, "%s changed since it was previewed (%v); preview it again", prompt.Quote(path), err)
	case errors.Is(err, safefs.ErrInvalidPath):
		return mcpsafe.Refuse(ReasonInvalidPath, "%v", err)
	case errors.Is(err, safefs.ErrOutsideRoots):
		return mcpsafe.Refuse(ReasonOutsideRoots, "%s is outside the allowed roots", prompt.Quote(path))
	case errors.Is(err, safefs.ErrSymlink):
		if t.leadsOut(path) {
			return mcpsafe.Refuse(ReasonOutsideRoots, "%s goes through a symbolic link that leads outside the allowed roots", prompt.Quote(path))
		}
		return mcpsafe.Refuse(ReasonNotARegularFile, "%s goes through a symbolic link; links are never followed", prompt.Quote(path))
	case errors.Is(err, safefs.ErrNotRegular), errors.Is(err, safefs.ErrNotDir):
		return mcpsafe.Refuse(ReasonNotARegularFile, "%s: %v", prompt.Quote(path), errors.Unwrap(err))
	case errors.Is(err, safefs.ErrNotFound):
		return mcpsafe.Refuse(ReasonNotFound, "%s does not exist", prompt.Quote(path))
	case errors.Is(err, safefs.ErrExists):
		return mcpsafe.Refuse(ReasonDestinationExists, "%s already exists; nothing is overwritten", prompt.Quote(path))
	}
	return err
}

// leadsOut classifies a symlink refusal for the message only: it follows
// the link lexically with the OS, which is fine because nothing acts on the
// answer except the choice of words.
func (t *tools) leadsOut(path string) bool {
	p := path
	if !filepath.IsAbs(p) {
		roots := t.fs.Roots()
		if len(roots) == 0 {
			return true
		}
		p = filepath.Join(roots[0], p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return true
	}
	return !t.fs.Covers(real)
}

// fileState is what a delete_file or move_file approval binds (as its
// JSON): the file as resolved, with its identity and state (device,
// inode, type, size, times, link count, content digest), and for a move
// the checked destination. Grant scopes anchor on "path" and
// "destination" (see Grants).
type fileState struct {
	Path        string      `json:"path"` // File.Path
	File        safefs.Info `json:"file"`
	Destination string      `json:"destination,omitempty"`
}

func (t *tools) inspect(path string) (safefs.Info, error) {
	info, err := t.fs.Inspect(path)
	if err != nil {
		return safefs.Info{}, t.refusal(path, err)
	}
	return info, nil
}

func (t *tools) describe(i safefs.Info) []string {
	covers := "the whole content"
	if i.HashScheme == safefs.HashSampled {
		covers = "the size and the first and last 4 MiB"
	}
	// What a person checks first (which file, how big, how recent), the
	// fingerprint last.
	d := []string{
		fmt.Sprintf("Resolved path: %s", prompt.Quote(i.Path)),
		fmt.Sprintf("Size: %s; modified %s", sizeWords(i.Size), localTime(i.ModTime, "2006-01-02 15:04:05 MST")),
	}
	if i.Nlink > 1 {
		d = append(d, fmt.Sprintf("This file has %d hard links: removing this name does not free the data, which stays reachable under the other names.", i.Nlink))
	}
	return append(d, fmt.Sprintf("Content fingerprint: %s (of %s; keyed by this server's key, not a SHA-256)", t.fingerprint(i), covers))
}

// sizeWords is a size a person reads at a glance, with the exact count.
func sizeWords(n int64) string {
	if n < 1024 {
		return sizeShort(n)
	}
	return fmt.Sprintf("%s (%d bytes)", sizeShort(n), n)
}

// sizeShort is a size in the largest unit that keeps it readable.
func sizeShort(n int64) string {
	const k = 1024
	switch {
	case n == 1:
		return "1 byte"
	case n < k:
		return fmt.Sprintf("%d bytes", n)
	case n < k*k:
		return fmt.Sprintf("%.1f KB", float64(n)/k)
	case n < k*k*k:
		return fmt.Sprintf("%.1f MB", float64(n)/(k*k))
	}
	return fmt.Sprintf("%.1f GB", float64(n)/(k*k*k))
}

// localTime is t in the server's time zone (the user's, for a server on
// their machine). A plan holds no time relative to now: an approval
// service compares a re-attached request byte for byte, so the plan must
// read the same on every call (and every replica: replicas that share an
// approval service share a time zone). The local page says how long ago
// (plan.PageOnly.Modified).
func localTime(t time.Time, layout string) string { return t.Local().Format(layout) }

// fingerprint is what a plan shows of a file's content: 48 bits of an HMAC
// of its digest under a key derived from the gate's key file (Gate.Mark),
// so every replica sharing that file shows the same plan: an approval
// service compares a re-attached request byte for byte, and a per-process
// key made an approved handle useless on any other process (random per
// process only with the zero Keys, like the grants). The plan travels through
// the model (approval_required, refusals), and the model cannot read the
// file; a plain digest, or a prefix of one, would let it confirm guesses
// of the content offline (is this file "hunter2\n"?). The human gets a
// short mark that changes with the content; the approval binds the full
// digest through the resolved fileState, which the model never sees.
func (t *tools) fingerprint(i safefs.Info) string {
	return hex.EncodeToString(t.gate.Mark("files content fingerprint v1", []byte(i.HashScheme+"\x00"+i.SHA256))[:6])
}

// targetState describes a target without its content: Targets are shown
// to humans and bound into the approval (the full digest is bound through
// the fileState), so they hold nothing per process and nothing an oracle
// needs.
func targetState(i safefs.Info) string {
	return fmt.Sprintf("regular file, %d bytes, modified %s", i.Size, i.ModTime.UTC().Format(time.RFC3339Nano))
}

func (t *tools) deleteTool() mcpsafe.ToolFor[pathArgs, fileState] {
	return mcpsafe.ToolFor[pathArgs, fileState]{
		Tool: mcpsafe.Tool{
			Name:         DeleteFile,
			Title:        "Delete a file",
			Description:  "Delete one regular file inside the allowed roots, after the user approves the exact file and its current content.",
			Irreversible: true,
		},
		Resolve: func(ctx context.Context, _ mcpsafe.Call, a pathArgs) (fileState, error) {
			info, err := t.inspect(a.Path)
			if err != nil {
				return fileState{}, err
			}
			return fileState{Path: info.Path, File: info}, nil
		},
		Preview: func(ctx context.Context, _ mcpsafe.Call, _ pathArgs, s fileState) (mcpsafe.Plan, error) {
			info := s.File
			return mcpsafe.Plan{
				Summary: fmt.Sprintf("Delete %s (%s, modified %s)", prompt.Quote(info.Rel), sizeShort(info.Size), localTime(info.ModTime, "2006-01-02 15:04 MST")),
				Details: t.describe(info),
				Targets: []mcpsafe.Target{{Name: info.Path, State: targetState(info)}},
				// For the local page alone: the model must not read it.
				PageOnly: lostPreview(info),
			}, nil
		},
		Execute: func(ctx context.Context, _ mcpsafe.Call, _ pathArgs, s fileState, _ mcpsafe.Approval) (*mcp.CallToolResult, error) {
			info := s.File
			if err := t.fs.Remove(info.Path, info); err != nil {
				return nil, t.refusal(info.Path, err)
			}
			return textResult(fmt.Sprintf("Deleted %s.", prompt.Quote(info.Path))), nil
		},
	}
}

func (t *tools) moveTool() mcpsafe.ToolFor[moveArgs, fileState] {
	return mcpsafe.ToolFor[moveArgs, fileState]{
		Tool: mcpsafe.Tool{
			Name:        MoveFile,
			Title:       "Move a file",
			Description: "Move or rename one regular file inside the allowed roots, after the user approves. Never overwrites an existing destination.",
		},
		Resolve: func(ctx context.Context, _ mcpsafe.Call, a moveArgs) (fileState, error) {
			info, err := t.inspect(a.Source)
			if err != nil {
				return fileState{}, err
			}
			dst, err := t.fs.CheckDestination(a.Destination)
			if err != nil {
				return fileState{}, t.refusal(a.Destination, err)
			}
			return fileState{Path: info.Path, File: info, Destination: dst}, nil
		},
		Preview: func(ctx context.Context, _ mcpsafe.Call, _ moveArgs, s fileState) (mcpsafe.Plan, error) {
			info, dst := s.File, s.Destination
			return mcpsafe.Plan{
				Summary: fmt.Sprintf("Move %s to %s", prompt.Quote(info.Path), prompt.Quote(dst)),
				Details: t.describe(info),
				Targets: []mcpsafe.Target{
					{Name: info.Path, State: targetState(info)},
					{Name: dst, State: "does not exist"},
				},
			}, nil
		},
		Execute: func(ctx context.Context, _ mcpsafe.Call, _ moveArgs, s fileState, _ mcpsafe.Approval) (*mcp.CallToolResult, error) {
			info, dst := s.File, s.Destination
			if err := t.fs.Move(info.Path, dst, info); err != nil {
				if errors.Is(err, safefs.ErrExists) && !errors.Is(err, safefs.ErrChanged) {
					return nil, t.refusal(dst, err)
				}
				return nil, t.refusal(info.Path, err)
			}
			return textResult(fmt.Sprintf("Moved %s to %s.", prompt.Quote(info.Path), prompt.Quote(dst))), nil
		},
	}
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// EntryView is one directory entry as list_directory returns it.
type EntryView struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Size     int64  `json:"size"`
	Modified string `json:"modified"`
}

// Listing is list_directory's structured result.
type Listing struct {
	Path    string      `json:"path"`
	Entries []EntryView `json:"entries"`
}

// readOnlyHandler decodes {path} strictly and renders f's answer or
// refusal. These tools change nothing, so they are not gated, but they are
// confined exactly like the gated ones.
func readOnlyHandler(f func(path string) (any, error)) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a pathArgs
		dec := json.NewDecoder(bytes.NewReader(req.Params.Arguments))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return refusedResult(mcpsafe.Refuse(mcpsafe.ReasonArgumentsInvalid, "want {\"path\": string}: %v", err)), nil
		}
		out, err := f(a.Path)
		if err != nil {
			return refusedResult(err), nil
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
			StructuredContent: out,
		}, nil
	}
}

func (t *tools) list(path string) (any, error) {
	entries, err := t.fs.List(path)
	if err != nil {
		return nil, t.refusal(path, err)
	}
	out := Listing{Path: path, Entries: []EntryView{}}
	for _, e := range entries {
		out.Entries = append(out.Entries, EntryView{Name: e.Name, Type: e.Type, Size: e.Size, Modified: e.ModTime.UTC().Format(time.RFC3339)})
	}
	return out, nil
}

// InfoView is file_info's structured result.
type InfoView struct {
	Path     string `json:"path"`
	Type     string `json:"type"`
	Size     int64  `json:"size"`
	Mode     string `json:"mode"`
	Modified string `json:"modified"`
	Links    uint64 `json:"hard_links"`
}

func (t *tools) info(path string) (any, error) {
	e, i, err := t.fs.Stat(path)
	if err != nil {
		return nil, t.refusal(path, err)
	}
	return InfoView{
		Path: i.Path, Type: e.Type, Size: e.Size, Mode: e.Mode.String(),
		Modified: e.ModTime.UTC().Format(time.RFC3339), Links: i.Nlink,
	}, nil
}

func refusedResult(err error) *mcp.CallToolResult {
	var r *mcpsafe.Refusal
	if !errors.As(err, &r) {
		r = &mcpsafe.Refusal{Reason: "failed", Message: err.Error()}
	}
	return r.Result()
}
