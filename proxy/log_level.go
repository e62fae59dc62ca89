package proxy

import (
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
