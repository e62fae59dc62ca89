// Command benchdrive drives the instruction-count benchmarks of
// scripts/bench-instructions. Each mode makes -warm calls and then -n more,
// so that valgrind's count of a run with -n N minus the count of a run with
// -n 0 is the cost of N calls, start-up and shutdown cancelled out.
//
//	benchdrive inproc -path raw|gate|gate-journal|raw-fsync|token [-journal FILE] -n N
//	    client and server in this process, over the SDK's in-memory transport
//	benchdrive stdio-client -n N -- CMD ARGS...
//	    a client of the stdio server CMD (valgrind wrapping the process measured)
//	benchdrive http-client -n N [-protocol V] -- CMD ARGS...
//	    starts a Go upstream over streamable HTTP in this process, then CMD,
//	    with {UPSTREAM} and {ADDR} in ARGS replaced by the upstream's URL and
//	    the address CMD is to listen on; calls through it, then stops it with
//	    SIGTERM and waits for it
//	benchdrive upstream-stdio [-legacy] a Go MCP server over stdio (tool echo, read-only);
//	    -legacy: it speaks only protocol 2025-11-25, as most stdio servers today
//	benchdrive relay -- CMD ARGS...    the minimal line relay (floor of a stdio proxy)
//	benchdrive revproxy -upstream URL -addr ADDR
//	    net/http/httputil.ReverseProxy (floor of an HTTP proxy)
//	benchdrive sdkrelay -upstream URL -addr ADDR
//	    a relay built only from the SDK (server with sessions, client leg)
//	benchdrive journal-gen -records N -out FILE
//	    a journal of N records (approval and outcome pairs) written by the real writer
//	benchdrive journal-verify FILE
//	    journal.VerifyFile in this process; prints records, bytes allocated, allocations, CPU time
//	benchdrive journal-open [-legacy-head] FILE
//	    journal.Open and Close in this process; prints CPU time, bytes allocated, allocations
//
// The approval page has its own driver, internal/benchpage: linking the
// approval service here would add its packages' globals to what every GC
// cycle of the in-process rows scans, and so to their counts.
//
// It is not part of mcpsafe: it exists so that every figure of the bench
// is counted over the same, real code (the SDK, the gate, the proxy binary).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchdrive MODE [flags]")
		os.Exit(2)
	}
	mode, args := os.Args[1], os.Args[2:]
	var err error
	switch mode {
	case "inproc":
		err = inproc(args)
	case "stdio-client":
		err = stdioClient(args)
	case "http-client":
		err = httpClient(args)
	case "upstream-stdio":
		err = upstreamStdio(args)
	case "relay":
		err = relay(args)
	case "revproxy":
		err = revproxy(args)
	case "sdkrelay":
		err = sdkRelay(args)
	case "journal-gen":
		err = journalGen(args)
	case "journal-verify":
		err = journalVerify(args)
	case "journal-open":
		err = journalOpen(args)
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchdrive "+mode+":", err)
		os.Exit(1)
	}
}

type benchArgs struct {
	Path string `json:"path"`
}

var pathSchema = map[string]any{
	"type":                 "object",
	"properties":           map[string]any{"path": map[string]any{"type": "string"}},
	"required":             []string{"path"},
	"additionalProperties": false,
}

// work is the tool's own work, identical on every path.
type work struct{ n atomic.Int64 }

func (w *work) do(path string) *mcp.CallToolResult {
	w.n.Add(1)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched " + path}}}
}

// fsyncFloor is one record-sized line written and fsync'd: what a journal
// that records a call durably cannot do without.
type fsyncFloor struct {
	f    *os.File
	line []byte
}

func (ff *fsyncFloor) write() error {
	if _, err := ff.f.Write(ff.line); err != nil {
		return err
	}
	return ff.f.Sync()
}

func inproc(args []string) error {
	fl := flag.NewFlagSet("inproc", flag.ExitOnError)
	path := fl.String("path", "raw", "raw | gate | gate-journal | raw-fsync | token")
	jpath := fl.String("journal", "", "journal file (gate-journal, raw-fsync)")
	n := fl.Int("n", 0, "measured calls")
	warm := fl.Int("warm", 20, "calls before the measured ones")
	gap := fl.Duration("gap", 0, "pause before each measured call (calls spaced out, as one client at its own pace makes them)")
	allocShare := fl.Bool("allocshare", false, "print the bytes allocated per measured call, and the part allocated under the SDK's JSON decoder (heap profile of every allocation)")
	memProfile := fl.String("memprofile", "", "write a heap profile of every allocation (the warm-up included) to this file, for go tool pprof -sample_index=alloc_space")
	fl.Parse(args)
	if *allocShare || *memProfile != "" {
		runtime.MemProfileRate = 1
	}
	ctx := context.Background()
	w := &work{}
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-server", Version: "1"}, nil)
	raw := func(ff *fsyncFloor) {
		s.AddTool(&mcp.Tool{Name: "touch", Description: "touch", InputSchema: pathSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a benchArgs
			if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
				return nil, err
			}
			if ff != nil {
				if err := ff.write(); err != nil {
					return nil, err
				}
			}
			return w.do(a.Path), nil
		})
	}
	switch *path {
	case "raw":
		raw(nil)
	case "raw-fsync":
		f, err := os.OpenFile(*jpath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		// As long as one auto-approved call's approval record.
		raw(&fsyncFloor{f: f, line: []byte(strings.Repeat("x", 511) + "\n")})
	case "gate", "gate-journal", "token":
		opts := mcpsafe.Options{Audience: "bench", Journal: journal.Discard, Mode: mcpsafe.ModeAuto}
		if *path == "gate-journal" {
			j, err := journal.Open(*jpath)
			if err != nil {
				return err
			}
			defer j.Close()
			opts.Journal = j
		}
		if *path == "token" {
			opts.Mode = mcpsafe.ModeToken
		}
		g, err := mcpsafe.New(opts)
		if err != nil {
			return err
		}
		tool := mcpsafe.Tool{
			Name:        "touch",
			InputSchema: pathSchema,
			Preview: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (mcpsafe.Plan, error) {
				return mcpsafe.Plan{Summary: "touch a note"}, nil
			},
			Execute: func(_ context.Context, c mcpsafe.Call, _ mcpsafe.Approval) (*mcp.CallToolResult, error) {
				var a benchArgs
				if err := c.Decode(&a); err != nil {
					return nil, err
				}
				return w.do(a.Path), nil
			},
		}
		if *path != "token" {
			tool.AutoApprove = []mcpsafe.Rule{{Name: "bench", Match: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (bool, error) { return true, nil }}}
		}
		if err := g.Register(s, tool); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown path %q", *path)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		return err
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{})
	if err != nil {
		return err
	}
	defer cs.Close()
	one := func() error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{"path": "cache.txt"}})
		if err != nil {
			return err
		}
		if *path == "token" {
			sc, _ := res.StructuredContent.(map[string]any)
			tok, _ := sc[mcpsafe.TokenField].(string)
			if tok == "" {
				return fmt.Errorf("no token in %v", res.Content)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{"path": "cache.txt", mcpsafe.TokenField: tok}})
			if err != nil {
				return err
			}
		}
		if res.IsError {
			return fmt.Errorf("tool error: %v", res.Content)
		}
		return nil
	}
	for range *warm {
		if err := one(); err != nil {
			return err
		}
	}
	var all0, dec0 int64
	if *allocShare {
		all0, dec0 = allocatedUnder(sdkDecoder)
	}
	for range *n {
		if *gap > 0 {
			time.Sleep(*gap)
		}
		if err := one(); err != nil {
			return err
		}
	}
	if *allocShare && *n > 0 {
		all1, dec1 := allocatedUnder(sdkDecoder)
		fmt.Printf("alloc_bytes_per_call=%d sdk_decoder_alloc_bytes_per_call=%d\n", (all1-all0)/int64(*n), (dec1-dec0)/int64(*n))
	}
	if got, want := w.n.Load(), int64(*warm+*n); got != want {
		return fmt.Errorf("the work ran %d times, want %d", got, want)
	}
	if *memProfile != "" {
		return writeHeapProfile(*memProfile)
	}
	return nil
}

func writeHeapProfile(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	runtime.GC() // the profile reflects the cycle before the last one
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func upstreamStdio(args []string) error {
	fl := flag.NewFlagSet("upstream-stdio", flag.ExitOnError)
	legacy := fl.Bool("legacy", false, "speak only protocol 2025-11-25")
	fl.Parse(args)
	s := upstreamServer()
	if *legacy {
		s = upstreamServerWith(&mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	}
	return s.Run(context.Background(), &mcp.StdioTransport{})
}

// upstreamServer is the upstream of the proxy rows: one read-only tool
// that answers with a line of text, as a file read does.
func upstreamServer() *mcp.Server { return upstreamServerWith(nil) }

func upstreamServerWith(opts *mcp.ServerOptions) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-upstream", Version: "1"}, opts)
	s.AddTool(&mcp.Tool{Name: "echo", Description: "echo", InputSchema: map[string]any{"type": "object"},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo " + string(req.Params.Arguments)}}}, nil
		})
	return s
}

func callLoop(ctx context.Context, cs *mcp.ClientSession, total int) error {
	for i := range total {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"n": i}})
		if err != nil {
			return err
		}
		if res.IsError {
			return fmt.Errorf("tool error: %v", res.Content)
		}
	}
	return nil
}

func splitCommand(fl *flag.FlagSet) ([]string, error) {
	if fl.NArg() == 0 {
		return nil, fmt.Errorf("name the command after --")
	}
	return fl.Args(), nil
}

func stdioClient(args []string) error {
	fl := flag.NewFlagSet("stdio-client", flag.ExitOnError)
	n := fl.Int("n", 0, "measured calls")
	warm := fl.Int("warm", 20, "calls before the measured ones")
	fl.Parse(args)
	argv, err := splitCommand(fl)
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	ctx := context.Background()
	// Not CommandTransport: its Close kills a process that takes more than
	// a few seconds to exit, and valgrind writes its counts at exit.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
		Connect(ctx, &mcp.IOTransport{Reader: out, Writer: in}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return err
	}
	if err := callLoop(ctx, cs, *warm+*n); err != nil {
		return err
	}
	in.Close()
	cs.Close()
	return cmd.Wait()
}

func httpClient(args []string) error {
	fl := flag.NewFlagSet("http-client", flag.ExitOnError)
	n := fl.Int("n", 0, "measured calls")
	warm := fl.Int("warm", 20, "calls before the measured ones")
	protocol := fl.String("protocol", "", "protocol version the client asks for (default: the SDK's newest)")
	fl.Parse(args)
	argv, err := splitCommand(fl)
	if err != nil {
		return err
	}
	up := upstreamServer()
	ul, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go http.Serve(ul, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, &mcp.StreamableHTTPOptions{Stateless: true}))
	upstream := "http://" + ul.Addr().String() + "/mcp"
	// A free port for the process measured (closed again at once: it may
	// be taken in between, and then the run fails rather than measuring
	// something else).
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := pl.Addr().String()
	pl.Close()
	for i, a := range argv {
		argv[i] = strings.NewReplacer("{UPSTREAM}", upstream, "{ADDR}", addr).Replace(a)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-exited:
			return fmt.Errorf("%s exited before listening: %v", argv[0], err)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			return fmt.Errorf("%s did not listen on %s", argv[0], addr)
		}
	}
	ctx := context.Background()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	var opts *mcp.ClientSessionOptions
	if *protocol != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: *protocol}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: hc}, opts)
	if err != nil {
		cmd.Process.Kill()
		return err
	}
	if got := cs.InitializeResult().ProtocolVersion; *protocol != "" && got != *protocol {
		cmd.Process.Kill()
		return fmt.Errorf("negotiated protocol %s, want %s", got, *protocol)
	}
	err = callLoop(ctx, cs, *warm+*n)
	cs.Close()
	hc.CloseIdleConnections()
	cmd.Process.Signal(syscall.SIGTERM)
	if werr := <-exited; err == nil && werr != nil {
		err = fmt.Errorf("%s: %v", argv[0], werr)
	}
	return err
}

// relay is the floor a stdio proxy cannot go below: it passes each line on
// as is, parsing only method, id and tool name, as any relay that routes
// messages must. (The same as the minimal relay of proxy's process
// benchmarks.)
func relay(args []string) error {
	fl := flag.NewFlagSet("relay", flag.ExitOnError)
	fl.Parse(args)
	argv, err := splitCommand(fl)
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		relayLines(os.Stdin, in)
		in.Close()
	})
	relayLines(out, os.Stdout)
	wg.Wait()
	return cmd.Wait()
}

func relayLines(r io.Reader, w io.Writer) {
	br := bufio.NewReaderSize(r, 64<<10)
	var peek struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			json.Unmarshal(line, &peek)
			if _, werr := w.Write(line); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// revproxy is the floor an HTTP proxy process cannot go below: the
// standard library's reverse proxy, forwarding each request and streaming
// each response as bytes, parsing no JSON at all.
func revproxy(args []string) error {
	fl := flag.NewFlagSet("revproxy", flag.ExitOnError)
	upstream := fl.String("upstream", "", "upstream URL")
	addr := fl.String("addr", "127.0.0.1:0", "listen address")
	fl.Parse(args)
	target, err := url.Parse(*upstream)
	if err != nil {
		return err
	}
	target.Path = ""
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1 // SSE responses stream as they come
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveUntil(ctx, *addr, rp)
}

// serveUntil serves h on addr until ctx ends (the bench script's SIGTERM).
func serveUntil(ctx context.Context, addr string, h http.Handler) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(l); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// journalGen writes records approval/outcome pairs with the real writer,
// from enough goroutines that group commit shares each fsync.
func journalGen(args []string) error {
	fl := flag.NewFlagSet("journal-gen", flag.ExitOnError)
	records := fl.Int("records", 1_000_000, "records to write (approval and outcome pairs)")
	out := fl.String("out", "", "journal path")
	fl.Parse(args)
	j, err := journal.Open(*out)
	if err != nil {
		return err
	}
	ctx := context.Background()
	const workers = 512
	pairs := *records / 2
	var next atomic.Int64
	var wg sync.WaitGroup
	var first error
	var mu sync.Mutex
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(pairs) {
					return
				}
				call := fmt.Sprintf("call-%d", i)
				err := j.Append(ctx, journal.Record{Call: call, Tool: "touch", Decision: journal.PolicyAutoApproved,
					ArgsDigest: strings.Repeat("ab", 32), Principal: "bench", By: "bench", Summary: "touch a note", Args: json.RawMessage(`{"path":"cache.txt"}`)})
				if err == nil {
					err = j.Append(ctx, journal.Record{Call: call, Tool: "touch", Decision: journal.Executed})
				}
				if err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if cerr := j.Close(); first == nil {
		first = cerr
	}
	return first
}

func journalVerify(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("name the journal")
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c0 := cpuTime()
	sum, err := journal.VerifyFile(args[0])
	cpu := cpuTime() - c0
	runtime.ReadMemStats(&m1)
	if err != nil {
		return err
	}
	fmt.Printf("records=%d alloc_bytes=%d mallocs=%d cpu_s=%.3f\n", sum.Records, m1.TotalAlloc-m0.TotalAlloc, m1.Mallocs-m0.Mallocs, cpu.Seconds())
	return nil
}

// sdkDecoder matches the functions of the SDK's JSON decoder: go-sdk's
// internal/json and the segmentio/encoding/json decoder it wraps.
func sdkDecoder(fn string) bool {
	return strings.HasPrefix(fn, "github.com/modelcontextprotocol/go-sdk/internal/json.") ||
		strings.HasPrefix(fn, "github.com/segmentio/encoding/json.")
}

// allocatedUnder returns the bytes allocated so far (as of a fresh GC, from
// the heap profile) in all, and under a function that match accepts.
func allocatedUnder(match func(string) bool) (all, under int64) {
	runtime.GC()
	runtime.GC() // the profile reflects the cycle before the last one
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, true)
	for {
		recs = make([]runtime.MemProfileRecord, n+64)
		var ok bool
		if n, ok = runtime.MemProfile(recs, true); ok {
			recs = recs[:n]
			break
		}
	}
	for _, r := range recs {
		all += r.AllocBytes
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			if match(f.Function) {
				under += r.AllocBytes
				break
			}
			if !more {
				break
			}
		}
	}
	return all, under
}
