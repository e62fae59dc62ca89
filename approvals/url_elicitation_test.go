package approvals

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A remote server whose approver is this service, and a client that
// declares URL-mode elicitation, on both protocol generations: the gate
// sends the person to the request's card on the service (in the call on
// 2025-11-25, as input_required on 2026-07-28); the client's "accept"
// runs nothing; the approver, logged in, opens that link in Chromium and
// clicks Approve on that card; the call runs once, journaled as the
// service's signed decision by its approver, never client-accepted.
func TestURLElicitationSendsThePersonToTheService(t *testing.T) {
	for _, protocol := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(protocol, func(t *testing.T) {
			e := newEnv(t, ServiceOptions{})
			ctx := newChromium(t)
			browserLogin(t, ctx, e.srv.URL, "alice")
			link, err := channel.ServiceLink(e.srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			files := &fileStore{files: map[string]string{"cache.txt": "old cache"}}
			jr := &memJournal{}
			gate, err := mcpsafe.New(mcpsafe.Options{Audience: "files@e2e", Journal: jr, Mode: mcpsafe.ModeChannel,
				Approver: e.hook, ApproverLink: link, ChannelTimeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
			if err := gate.Register(server, files.deleteTool()); err != nil {
				t.Fatal(err)
			}
			st, ct := mcp.NewInMemoryTransports()
			ss, err := server.Connect(context.Background(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			urls := make(chan string, 4)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
					Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
				ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					if r.Params.Mode != "url" {
						t.Errorf("a form elicitation although the service's link was configured: %q", r.Params.Message)
						return &mcp.ElicitResult{Action: "decline"}, nil
					}
					urls <- r.Params.URL
					return &mcp.ElicitResult{Action: "accept"}, nil // the person agreed to open it; nothing more
				},
			}).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res := make(chan *mcp.CallToolResult, 1)
			go func() {
				r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": "cache.txt"}})
				if err != nil {
					t.Errorf("CallTool: %v", err)
					r = &mcp.CallToolResult{IsError: true}
				}
				res <- r
			}()
			var got string
			select {
			case got = <-urls:
			case <-time.After(20 * time.Second):
				t.Fatal("no URL elicitation")
			}
			if !strings.HasPrefix(got, e.srv.URL+"/#req-") {
				t.Fatalf("the client was sent to %q, not a request on the service %s", got, e.srv.URL)
			}
			select {
			case r := <-res:
				t.Fatalf("the call ended on the client's accept: %v", r.Content)
			case <-time.After(300 * time.Millisecond):
			}
			if files.runs() != 0 {
				t.Fatal("the client's accept ran the call")
			}
			// The link lands on that request's card.
			card := `article#` + strings.TrimPrefix(got, e.srv.URL+"/#")
			if err := chromedp.Do(ctx, chromedp.Navigate(got), chromedp.WaitVisible(chromedp.CSS(card+` button.approve`))); err != nil {
				t.Fatalf("the link %s shows no card %s: %v", got, card, err)
			}
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatal(err)
			}
			artifact(t, "url-elicitation-service-"+protocol+".png", png)
			press(t, ctx, card+` button.approve`)
			var r *mcp.CallToolResult
			select {
			case r = <-res:
			case <-time.After(30 * time.Second):
				t.Fatal("the call did not end after the approval")
			}
			if r.IsError || files.has("cache.txt") || files.runs() != 1 {
				t.Fatalf("after Approve on the service: isError=%v runs=%d %v", r.IsError, files.runs(), r.Content)
			}
			rec, ok := jr.find(journal.ChannelApproved)
			if !ok || rec.By != "alice" || rec.Assurance != "channel" {
				t.Fatalf("journal: %+v (found %v)", rec, ok)
			}
			if _, ok := jr.find(journal.ClientAccepted); ok {
				t.Fatal("the journal says client-accepted")
			}
		})
	}
}
