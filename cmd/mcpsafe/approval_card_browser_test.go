package main

// The approval card in a real MCP Apps host: headless Chromium runs a test
// page whose host is the official @modelcontextprotocol/ext-apps AppBridge
// with a real @modelcontextprotocol/client Client; the page renders the
// card from the server's ui:// resource in a sandboxed iframe and proxies
// the card's tool calls to the built binary over streamable HTTP. The
// files on disk and the journal are the assertions; screenshots go to
// testdata/artifacts.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/internal/browsertest"
	"github.com/mcpsafe/mcpsafe/journal"
)

// cardHostBundle bundles testdata/cardhost/host.mjs for the browser with
// the pinned npm packages scripts/npm-deps installs in .cache/npm-apps.
func cardHostBundle(t *testing.T) []byte {
	t.Helper()
	mods, err := filepath.Abs("../../.cache/npm-apps/node_modules")
	if err == nil {
		_, err = os.Stat(filepath.Join(mods, "@modelcontextprotocol/ext-apps/package.json"))
	}
	if err != nil {
		msg := "!!! @modelcontextprotocol/ext-apps is not installed (run scripts/npm-deps): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	entry, err := filepath.Abs("testdata/cardhost/host.mjs")
	must(t, err)
	out := filepath.Join(t.TempDir(), "host.js")
	cmd := exec.Command(filepath.Join(mods, ".bin/esbuild"), entry, "--bundle", "--format=iife", "--platform=browser", "--log-level=warning", "--outfile="+out)
	cmd.Env = append(os.Environ(), "NODE_PATH="+mods)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bundling the host page: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	must(t, err)
	return b
}

// startMCPHTTP runs the binary with args (which serve MCP over HTTP) and
// returns the URL it reports.
func startMCPHTTP(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, args...)
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	addr := make(chan string, 1)
	var log bytes.Buffer
	later := &lockedBuffer{}
	told := make(chan struct{}) // closed when its stderr ends: it exited
	t.Cleanup(func() {
		if t.Failed() {
			// Its goroutines, for a call that never came back: SIGQUIT
			// prints them and ends the process.
			cmd.Process.Signal(syscall.SIGQUIT)
			select {
			case <-told:
			case <-time.After(10 * time.Second):
			}
			t.Logf("%v said after start:\n%s", args, later.String())
		}
	})
	go func() {
		re := regexp.MustCompile(`serving MCP on (http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
				io.Copy(later, stderr)
				close(told)
				return
			}
			log.WriteString(sc.Text() + "\n")
		}
		close(addr)
	}()
	select {
	case u, ok := <-addr:
		if !ok {
			t.Fatalf("%v exited: %s", args, log.String())
		}
		return u
	case <-time.After(60 * time.Second):
		t.Fatalf("%v did not report its address", args)
	}
	return ""
}

// cardHost serves the host page and its bundle, and forwards /mcp to the
// server, so that the page talks to it from its own origin.
func cardHost(t *testing.T, bundle []byte, mcpURL string) string {
	t.Helper()
	target, err := url.Parse(mcpURL)
	must(t, err)
	page, err := os.ReadFile("testdata/cardhost/host.html")
	must(t, err)
	// What the page sent, what came back and how long each took, and what
	// the relay itself reported, shown when a test fails.
	requests := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("requests to %s:\n%s", mcpURL, requests.String())
		}
	})
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.Out.URL.Scheme, r.Out.URL.Host, r.Out.URL.Path = target.Scheme, target.Host, target.Path
		r.Out.Host = target.Host
		r.Out.Header.Del("Origin")
	}, FlushInterval: -1, ErrorLog: log.New(requests, "relay: ", log.Ltime|log.Lmicroseconds)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})
	mux.HandleFunc("GET /host.js", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		w.Write(bundle)
	})
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The page's message is read whole before it is relayed. Streamed
		// through, the relay's transport still reads the page's body once
		// more after its Content-Length bytes (to see it end) while the
		// server's answer may already be coming back; writing the answer's
		// headers makes net/http drain and close the page's body, that
		// last read fails, and the transport drops its connection to the
		// server with the answer half relayed. The page's client then waits
		// its 60 s for an answer that was cut off (golang/go#40747). Under
		// load that was the card tests' "request without an answer".
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "reading the page's message: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		start, sw := time.Now(), &statusWriter{ResponseWriter: w}
		fmt.Fprintf(requests, "%s >> %s session %s %.120s\n", start.Format("15:04:05.000"), r.Method, r.Header.Get("Mcp-Session-Id"), body)
		defer func() {
			// A relay whose copy of the answer breaks (the server's stream
			// cut, or the page gone, as at the end of a GET stream) aborts
			// with http.ErrAbortHandler: say so, then let net/http see it.
			e, aborted := recover(), ""
			if e != nil {
				aborted = " (relay aborted: answer cut off or page gone)"
			}
			fmt.Fprintf(requests, "%s << %s session %s: %d after %s%s\n", time.Now().Format("15:04:05.000"), r.Method, r.Header.Get("Mcp-Session-Id"),
				sw.status, time.Since(start), aborted)
			if e != nil {
				panic(e)
			}
		}()
		rp.ServeHTTP(sw, r)
	}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// statusWriter remembers the status the relay answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets the relay flush each server-sent event through.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// browserHost is the host page open in Chromium.
type browserHost struct {
	t     *testing.T
	ctx   context.Context
	tools []map[string]any
	seen  map[string]bool // iframe targets of earlier cards
}

func openHost(t *testing.T, hostURL string) *browserHost {
	t.Helper()
	ctx := browsertest.New(t, 900, 1000)
	must(t, chromedp.Do(ctx, chromedp.Navigate(hostURL)))
	tools, err := chromedp.Run(ctx, chromedp.Evaluate[[]map[string]any](`host.connect()`, chromedp.EvalAwaitPromise))
	must(t, err)
	return &browserHost{t: t, ctx: ctx, tools: tools, seen: map[string]bool{}}
}

func (h *browserHost) tool(name string) map[string]any {
	for _, tl := range h.tools {
		if tl["name"] == name {
			return tl
		}
	}
	return nil
}

// call is the model's call; it returns the result as the host got it.
func (h *browserHost) call(name string, args map[string]any) map[string]any {
	h.t.Helper()
	js, err := json.Marshal(args)
	must(h.t, err)
	res, err := chromedp.Run(h.ctx, chromedp.Evaluate[map[string]any](fmt.Sprintf(`host.call(%q, %s)`, name, js), chromedp.EvalAwaitPromise))
	must(h.t, err)
	return res
}

// render shows the card for the last call's result and returns a context
// and query options that reach into the card's iframe.
func (h *browserHost) render(name string, args map[string]any) (context.Context, []chromedp.QueryOption) {
	h.t.Helper()
	js, err := json.Marshal(args)
	must(h.t, err)
	_, err = chromedp.Run(h.ctx, chromedp.Evaluate[bool](fmt.Sprintf(`host.render(%q, %s, host.calls.at(-1).res)`, name, js), chromedp.EvalAwaitPromise))
	must(h.t, err)
	// Chromium may keep the sandboxed frame in the page's process (then
	// the iframe node has its document) or give it its own (a target).
	var fctx context.Context
	var q []chromedp.QueryOption
	waitFor(h.t, "the card's iframe", func() bool {
		infos, err := chromedp.Targets(h.ctx)
		must(h.t, err)
		for _, info := range infos {
			if info.Type == "iframe" && info.URL == "about:srcdoc" && !h.seen[string(info.TargetID)] {
				h.seen[string(info.TargetID)] = true
				ctx, cancel := chromedp.NewContext(h.ctx, chromedp.WithTargetID(info.TargetID))
				h.t.Cleanup(cancel)
				fctx = ctx
				return true
			}
		}
		nodes, err := chromedp.Run(h.ctx, chromedp.Nodes(chromedp.CSS(`iframe#card`)))
		must(h.t, err)
		if len(nodes) == 1 && nodes[0].ContentDocument != nil && nodes[0].ContentDocument.DocumentURL == "about:srcdoc" {
			fctx, q = h.ctx, []chromedp.QueryOption{chromedp.FromNode(nodes[0])}
			return true
		}
		return false
	})
	return fctx, q
}

// click clicks sel in the card as a person does: a mouse click on the
// page, at the element's place in the card's iframe (Chromium usually
// runs the sandboxed card in a process of its own, whose input comes
// through the page). A click that lands before Chromium routes input to a
// fresh frame is lost; so while the card's status stays empty (it is set
// at once on a decision, and the buttons are off after one), the click is
// repeated, a few times at most.
func (h *browserHost) click(fctx context.Context, q []chromedp.QueryOption, sel string) {
	h.t.Helper()
	for try := 0; try < 5; try++ {
		if q != nil { // the card runs in the page's process: chromedp finds it
			must(h.t, chromedp.Do(fctx, chromedp.Click(chromedp.CSS(sel), q...)))
		} else {
			frame, err := chromedp.Run(h.ctx, chromedp.Dimensions(chromedp.CSS(`iframe#card`)))
			must(h.t, err)
			el, err := chromedp.Run(fctx, chromedp.Dimensions(chromedp.CSS(sel)))
			must(h.t, err)
			x := frame.Content[0] + (el.Border[0]+el.Border[4])/2
			y := frame.Content[1] + (el.Border[1]+el.Border[5])/2
			must(h.t, chromedp.Do(h.ctx, chromedp.MouseClickXY(x, y)))
		}
		// The status says something within a second, or the click is
		// repeated (chromedp watches the query, not the test).
		sctx, cancel := context.WithTimeout(fctx, time.Second)
		_, err := chromedp.Run(sctx, chromedp.WaitReady(chromedp.CSS(`#status:not(:empty)`), q...))
		cancel()
		if err == nil {
			return
		}
	}
}

func (h *browserHost) shot(name string) {
	h.t.Helper()
	png, err := chromedp.Run(h.ctx, chromedp.FullScreenshot(100))
	must(h.t, err)
	browsertest.Artifact(h.t, name, png)
}

// cardStatus waits until the card's status says something and returns it.
func cardStatus(t *testing.T, fctx context.Context, q []chromedp.QueryOption, want string) string {
	t.Helper()
	var s string
	waitFor(t, "the card's status says "+want, func() bool {
		var err error
		s, err = chromedp.Run(fctx, chromedp.Text(chromedp.CSS(`#status`), q...))
		must(t, err)
		return strings.Contains(s, want)
	}, func() string {
		body, _ := chromedp.Run(fctx, chromedp.Evaluate[string](`document.body.innerText + " (approve disabled: " + document.getElementById("approve").disabled + ")"`))
		return fmt.Sprintf("status %q; the card says: %s", s, body)
	})
	return s
}

func cardRecords(t *testing.T, jpath, decision string) []journal.Record {
	var out []journal.Record
	for _, r := range readJournalFile(t, jpath) {
		if r.Decision == decision {
			out = append(out, r)
		}
	}
	return out
}

// mcpsafe files over HTTP, in a real host: Approve runs the call once;
// Deny runs nothing; a second click does nothing; the model's handle finds
// the outcome; a plan crafted to inject markup shows as text.
func TestApprovalCardInARealHost(t *testing.T) {
	bundle := cardHostBundle(t)
	root, jpath := pageRoot(t)
	evil := `<img src=x onerror="window.top.pwned=1">.txt`
	must(t, os.WriteFile(filepath.Join(root, evil), []byte("<script>window.top.pwned=2</script>\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "keep.txt"), []byte("keep\n"), 0o644))
	mcpURL := startMCPHTTP(t, "files", "--root", root, "--journal", jpath, "--http", "127.0.0.1:0")
	hostURL := cardHost(t, bundle, mcpURL)
	h := openHost(t, hostURL)

	// tools/list: the decision tool, app-only; the gated tools name the card.
	d := h.tool(approver.CardDecisionTool)
	if d == nil || fmt.Sprint(d["meta"]) != "map[ui:map[visibility:[app]]]" {
		t.Fatalf("decision tool as listed: %v", d)
	}
	del := h.tool("delete_file")
	if ui, _ := del["meta"].(map[string]any)["ui"].(map[string]any); ui["resourceUri"] != "ui://mcpsafe/approval-card" ||
		!strings.Contains(del["description"].(string), "approval card") {
		t.Fatalf("delete_file as listed: %v", del)
	}

	t.Run("approve runs once", func(t *testing.T) {
		h := openHost(t, hostURL) // (each its own browser: one has 90 seconds)
		args := map[string]any{"path": "notes.txt"}
		res := h.call("delete_file", args)
		if sc, _ := res["structuredContent"].(map[string]any); sc["status"] != "approval_pending" {
			t.Fatalf("first call: %v", res)
		}
		fctx, q := h.render("delete_file", args)
		must(t, chromedp.Do(fctx, chromedp.WaitEnabled(chromedp.CSS(`#approve`), q...)))
		body, err := chromedp.Run(fctx, chromedp.Text(chromedp.CSS(`body`), q...))
		must(t, err)
		for _, want := range []string{"delete_file", "notes.txt", "Expires in", "Approve", "Deny"} {
			if !strings.Contains(body, want) {
				t.Errorf("the card lacks %q: %s", want, body)
			}
		}
		h.shot("approval-card-delete-file.png")
		h.click(fctx, q, `#approve`)
		cardStatus(t, fctx, q, "Approved")
		if _, err := os.Stat(filepath.Join(root, "notes.txt")); !os.IsNotExist(err) {
			t.Fatal("approved in the card, but the file is still there")
		}
		// A second click: the buttons are off, and nothing more is decided.
		h.click(fctx, q, `#approve`)
		time.Sleep(300 * time.Millisecond)
		if n := len(cardRecords(t, jpath, journal.CardAccepted)); n != 1 {
			t.Fatalf("%d card approvals journaled, want 1", n)
		}
		if r := cardRecords(t, jpath, journal.CardAccepted)[0]; r.Assurance != "client_relayed" || r.Tool != "delete_file" {
			t.Fatalf("journal: %+v", r)
		}
		// The card told the conversation (ui/message through the host).
		msgs, err := chromedp.Run(h.ctx, chromedp.Evaluate[string](`JSON.stringify(host.messages)`))
		must(t, err)
		if !strings.Contains(msgs, "I approved delete_file") {
			t.Fatalf("the host got no message from the card: %s", msgs)
		}
		h.shot("approval-card-approved.png")
	})

	t.Run("deny runs nothing", func(t *testing.T) {
		h := openHost(t, hostURL) // (each its own browser: one has 90 seconds)
		args := map[string]any{"path": "keep.txt"}
		res := h.call("delete_file", args)
		handle, _ := res["structuredContent"].(map[string]any)["approval_token"].(string)
		fctx, q := h.render("delete_file", args)
		must(t, chromedp.Do(fctx, chromedp.WaitEnabled(chromedp.CSS(`#deny`), q...)))
		h.click(fctx, q, `#deny`)
		cardStatus(t, fctx, q, "Denied")
		if _, err := os.Stat(filepath.Join(root, "keep.txt")); err != nil {
			t.Fatal("denied, but the file is gone")
		}
		// The model's handle reads the denial and runs nothing.
		again := h.call("delete_file", map[string]any{"path": "keep.txt", "approval_token": handle})
		if sc, _ := again["structuredContent"].(map[string]any); sc["reason"] != mcpsafe.ReasonDeclined {
			t.Fatalf("the handle after Deny: %v", again)
		}
		if _, err := os.Stat(filepath.Join(root, "keep.txt")); err != nil {
			t.Fatal("the handle ran the denied call")
		}
	})

	t.Run("markup in the plan is text", func(t *testing.T) {
		h := openHost(t, hostURL) // (each its own browser: one has 90 seconds)
		args := map[string]any{"path": evil}
		h.call("delete_file", args)
		fctx, q := h.render("delete_file", args)
		must(t, chromedp.Do(fctx, chromedp.WaitEnabled(chromedp.CSS(`#approve`), q...)))
		body, err := chromedp.Run(fctx, chromedp.Text(chromedp.CSS(`body`), q...))
		must(t, err)
		if !strings.Contains(body, `<img src=x onerror=`) {
			t.Fatalf("the crafted name is not shown as text: %s", body)
		}
		imgs, err := chromedp.Run(fctx, chromedp.Evaluate[int](`document.querySelectorAll("img, script:not(:first-of-type)").length`))
		if err == nil && imgs != 0 {
			t.Fatalf("the card holds %d injected elements", imgs)
		}
		pwned, err := chromedp.Run(h.ctx, chromedp.Evaluate[bool](`window.pwned !== undefined`))
		must(t, err)
		if pwned {
			t.Fatal("script from the plan ran")
		}
		h.shot("approval-card-markup-as-text.png")
		h.click(fctx, q, `#deny`)
		cardStatus(t, fctx, q, "Denied")
	})
}

// After the approval expires the card says so, its buttons are off, and
// nothing runs.
func TestApprovalCardExpires(t *testing.T) {
	bundle := cardHostBundle(t)
	root, jpath := pageRoot(t)
	mcpURL := startMCPHTTP(t, "files", "--root", root, "--journal", jpath, "--ttl", "4s", "--http", "127.0.0.1:0")
	h := openHost(t, cardHost(t, bundle, mcpURL))
	args := map[string]any{"path": "notes.txt"}
	h.call("delete_file", args)
	fctx, q := h.render("delete_file", args)
	must(t, chromedp.Do(fctx, chromedp.WaitEnabled(chromedp.CSS(`#approve`), q...)))
	cardStatus(t, fctx, q, "expired")
	dis, err := chromedp.Run(fctx, chromedp.Evaluate[bool](`document.getElementById("approve").disabled && document.getElementById("deny").disabled`))
	if err == nil && !dis {
		t.Fatal("the expired card still offers its buttons")
	}
	h.click(fctx, q, `#approve`)
	time.Sleep(300 * time.Millisecond)
	h.shot("approval-card-expired.png")
	if _, err := os.Stat(filepath.Join(root, "notes.txt")); err != nil {
		t.Fatal("expired, but the file is gone")
	}
	if n := len(cardRecords(t, jpath, journal.CardAccepted)); n != 0 {
		t.Fatalf("%d card approvals journaled after expiry", n)
	}
}

// An edit_file through `mcpsafe proxy` in front of the npm filesystem
// server (stdio), and the same through a gateway: the card shows the
// server's dry-run diff (the screenshot; the proxy's example policy asks
// for it), and Approve edits the file once.
func TestApprovalCardShowsAProxiedEdit(t *testing.T) {
	bundle := cardHostBundle(t)
	fsBin := npmFilesystemServer(t)
	policy, err := filepath.Abs("../../proxy/testdata/example-policy.yaml")
	must(t, err)
	for _, via := range []string{"proxy", "gateway"} {
		t.Run(via, func(t *testing.T) {
			data, dir := t.TempDir(), t.TempDir()
			target := filepath.Join(data, "notes.txt")
			must(t, os.WriteFile(target, []byte("line one\nline two\nline three\n"), 0o644))
			jpath := filepath.Join(dir, "journal.jsonl")
			server := []string{"proxy", "--journal", jpath, "--http", "127.0.0.1:0"}
			tool := "edit_file"
			if via == "proxy" {
				server = append(server, "--policy", policy, "--", fsBin, data)
			} else {
				cfg := filepath.Join(dir, "gateway.yaml")
				must(t, os.WriteFile(cfg, []byte("servers:\n  fs:\n    command: [\""+fsBin+"\", \""+data+"\"]\n"), 0o644))
				server = append(server, "--config", cfg)
				tool = "fs__edit_file"
			}
			h := openHost(t, cardHost(t, bundle, startMCPHTTP(t, server...)))
			if h.tool(approver.CardDecisionTool) == nil {
				t.Fatalf("no decision tool listed: %v", h.tools)
			}
			args := map[string]any{"path": target, "edits": []any{map[string]any{"oldText": "line two", "newText": "line 2 (edited by agent)"}}}
			res := h.call(tool, args)
			if sc, _ := res["structuredContent"].(map[string]any); sc["status"] != "approval_pending" {
				t.Fatalf("first call: %v", res)
			}
			fctx, q := h.render(tool, args)
			must(t, chromedp.Do(fctx, chromedp.WaitEnabled(chromedp.CSS(`#approve`), q...)))
			if via == "proxy" {
				// (The gateway here has no policy, so its plan shows the
				// arguments, not a dry run.)
				dels, err := chromedp.Run(fctx, chromedp.Text(chromedp.CSS(`span.del`), q...))
				must(t, err)
				adds, err := chromedp.Run(fctx, chromedp.Text(chromedp.CSS(`span.add`), q...))
				must(t, err)
				if !strings.Contains(dels, "line two") || !strings.Contains(adds, "line 2 (edited by agent)") {
					t.Fatalf("the card's diff: -%q +%q", dels, adds)
				}
				h.shot("approval-card-edit-file.png")
			}
			h.click(fctx, q, `#approve`)
			cardStatus(t, fctx, q, "Approved")
			if b, _ := os.ReadFile(target); string(b) != "line one\nline 2 (edited by agent)\nline three\n" {
				t.Fatalf("the file after the approval: %q", b)
			}
			if n := len(cardRecords(t, jpath, journal.CardAccepted)); n != 1 {
				t.Fatalf("%d card approvals journaled, want 1", n)
			}
		})
	}
}

// A 1,000-line write_file through `mcpsafe proxy` in front of the npm
// filesystem server, shown whole in the card: with the example policy as
// a diff (the content argument named as shown by it), without a policy as
// the content argument itself. Either is in a box that scrolls under a
// line saying all 1,000 lines are there (the whole text is in the card,
// not only what is in view), with Approve and Deny in view below it (the
// screenshots); Approve writes the file whole, once.
func TestApprovalCardShowsALongWriteWhole(t *testing.T) {
	bundle := cardHostBundle(t)
	fsBin := npmFilesystemServer(t)
	policy, err := filepath.Abs("../../proxy/testdata/example-policy.yaml")
	must(t, err)
	var content strings.Builder
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&content, "line %d of a long file written by the agent\n", i)
	}
	for _, tc := range []struct {
		name, box, mark, note, shot string
		flags                       []string
	}{
		{"as a diff", ".part pre", "+ line ", "All 1000 lines are here, in a box that scrolls", "approval-card-long-write.png", []string{"--policy", policy}},
		{"as the argument", "#plan li .scroll", "│ line ", "All of this value is here, in a box that scrolls", "approval-card-long-argument.png", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, dir := t.TempDir(), t.TempDir()
			target := filepath.Join(data, "long.txt")
			jpath := filepath.Join(dir, "journal.jsonl")
			server := append(append([]string{"proxy", "--journal", jpath, "--http", "127.0.0.1:0"}, tc.flags...), "--", fsBin, data)
			h := openHost(t, cardHost(t, bundle, startMCPHTTP(t, server...)))
			args := map[string]any{"path": target, "content": content.String()}
			res := h.call("write_file", args)
			if sc, _ := res["structuredContent"].(map[string]any); sc["status"] != "approval_pending" {
				t.Fatalf("first call: %v", res)
			}
			fctx, q := h.render("write_file", args)
			must(t, chromedp.Do(fctx, chromedp.WaitEnabled(chromedp.CSS(`#approve`), q...)))
			// (Read through queries, which reach the card whether Chromium
			// runs it in the page's process or its own; the text is the
			// box's whole text, in view or not.)
			shown, err := chromedp.Run(fctx, chromedp.TextContent(chromedp.CSS(tc.box), q...))
			must(t, err)
			if n := strings.Count(shown, tc.mark); n != 1000 || !strings.Contains(shown, tc.mark+"1 of") || !strings.Contains(shown, tc.mark+"1000 of") {
				t.Fatalf("the card shows %d lines of the write, want all 1,000: %.200q", n, shown)
			}
			scroll, err := chromedp.Run(fctx, chromedp.JavascriptAttribute[int](chromedp.CSS(tc.box), "scrollHeight", q...))
			must(t, err)
			client, err := chromedp.Run(fctx, chromedp.JavascriptAttribute[int](chromedp.CSS(tc.box), "clientHeight", q...))
			must(t, err)
			note, err := chromedp.Run(fctx, chromedp.Text(chromedp.CSS(`#plan .note`), q...))
			must(t, err)
			if scroll <= client || !strings.Contains(note, tc.note) {
				t.Fatalf("the long text is not in a box that scrolls, saying so (scroll %d, client %d, note %q)", scroll, client, note)
			}
			// The card stays of a size a host shows whole (this one up to
			// 900 pixels), its buttons below the box, not 1,000 lines
			// further down.
			height, err := chromedp.Run(fctx, chromedp.JavascriptAttribute[int](chromedp.CSS(`body`), "offsetHeight", q...))
			must(t, err)
			if height > 900 {
				t.Fatalf("the card is %d pixels tall: its buttons are out of a host's view", height)
			}
			if tc.flags != nil {
				argsShown, err := chromedp.Run(fctx, chromedp.TextContent(chromedp.CSS(`#plan > ul:last-of-type`), q...))
				must(t, err)
				if !strings.Contains(argsShown, `"content": shown in full by change 1 above`) {
					t.Fatalf("the card's arguments: %q", argsShown)
				}
			}
			h.shot(tc.shot)
			h.click(fctx, q, `#approve`)
			cardStatus(t, fctx, q, "Approved")
			if b, _ := os.ReadFile(target); string(b) != content.String() {
				t.Fatalf("the file after the approval is %d bytes, want the whole %d", len(b), content.Len())
			}
			if n := len(cardRecords(t, jpath, journal.CardAccepted)); n != 1 {
				t.Fatalf("%d card approvals journaled, want 1", n)
			}
		})
	}
}
