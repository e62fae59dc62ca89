package proxy

import (
	"context"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The log level a client of the 2025-11-25 generation sets once for its
// session (logging/setLevel), kept by the proxy for upstream legs of the
// 2026-07-28 generation, which have no session level and read it from
// each request's _meta (see withCaps). A gateway keeps one map for all its
// servers, so that a server started after the level was set has it too.
type logLevels struct{ m *sync.Map }

func (s *Server) levels() logLevels { return s.member.g.levels() }

func (g *Gateway) levels() logLevels { return logLevels{&g.logLevels} }

func (l logLevels) set(session mcp.Session, p *mcp.SetLoggingLevelParams) {
	ss, ok := session.(*mcp.ServerSession)
	if !ok || p == nil {
		return
	}
	if _, had := l.m.Swap(ss, p.Level); !had {
		go func() {
			ss.Wait()
			l.m.Delete(ss)
		}()
	}
}

func (l logLevels) of(ss *mcp.ServerSession) (mcp.LoggingLevel, bool) {
	v, ok := l.m.Load(ss)
	level, _ := v.(mcp.LoggingLevel)
	return level, ok
}

// sdkLogger is l as the SDK gets it: only its warnings and errors. Its
// INFO lines ("server session connected", "session initialized", "client
// log level set") describe the SDK's own workings and would fill an
// operator's stderr around the proxy's lines.
func sdkLogger(l *slog.Logger) *slog.Logger {
	return slog.New(warnAndUp{l.Handler()})
}

type warnAndUp struct{ slog.Handler }

func (h warnAndUp) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn && h.Handler.Enabled(ctx, level)
}

func (h warnAndUp) WithAttrs(attrs []slog.Attr) slog.Handler {
	return warnAndUp{h.Handler.WithAttrs(attrs)}
}

func (h warnAndUp) WithGroup(name string) slog.Handler { return warnAndUp{h.Handler.WithGroup(name)} }
