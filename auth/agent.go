package auth

import (
	"net/http"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"svc/internal/domain/eval"
	"svc/internal/platform/derrors"
)

// The headers a client declares the agent acting with its credential by
// (docs/agents.md). They are accepted on every authenticated request; a tool
// call through /mcp carries its MCP request's own.
const (
	AgentIDHeader        = "X-Svc-Agent-Id"
	AgentNameHeader      = "X-Svc-Agent-Name"
	ConversationIDHeader = "X-Svc-Conversation-Id"
)

// Bounds of a declared agent.
const (
	MaxAgentIDLen        = 128
	MaxAgentNameLen      = 200
	MaxConversationIDLen = 200
)

// agentIDPattern is an agent id: letters, digits and . _ - @ / +, starting
// with a letter or digit. No ':' so that causedBy (agent:<id>:<conversation>)
// splits at its first two colons.
var agentIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@/+-]*$`)

// conversationPattern is a conversation id: as an agent id, plus ':' and
// '=' (MCP session ids and opaque tokens).
var conversationPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@/+:=-]*$`)

// DeclaredAgent reads the agent a request declares by its X-Svc-Agent-*
// headers: nil when none is sent. A name or conversation without an id, or
// a value out of bounds, is an ErrInvalid naming the header and what to
// fix.
func DeclaredAgent(h http.Header) (*eval.Agent, error) {
	id := strings.TrimSpace(h.Get(AgentIDHeader))
	name := strings.TrimSpace(h.Get(AgentNameHeader))
	conv := strings.TrimSpace(h.Get(ConversationIDHeader))
	if id == "" && name == "" && conv == "" {
		return nil, nil
	}
	if id == "" {
		return nil, derrors.Invalidf("%s is required when %s or %s is sent", AgentIDHeader, AgentNameHeader, ConversationIDHeader)
	}
	a := &eval.Agent{ID: id, Name: name, Conversation: conv}
	if err := ValidateAgent(a); err != nil {
		return nil, err
	}
	return a, nil
}

// ValidateAgent checks a declared agent's bounds and characters, naming the
// header of the field at fault.
func ValidateAgent(a *eval.Agent) error {
	if a == nil {
		return nil
	}
	switch {
	case a.ID == "":
		return derrors.Invalidf("%s must not be empty", AgentIDHeader)
	case len(a.ID) > MaxAgentIDLen:
		return derrors.Invalidf("%s is %d bytes, at most %d", AgentIDHeader, len(a.ID), MaxAgentIDLen)
	case !agentIDPattern.MatchString(a.ID):
		return derrors.Invalidf("%s %q: use letters, digits and . _ - @ / +, starting with a letter or digit", AgentIDHeader, clipText(a.ID))
	case len(a.Name) > MaxAgentNameLen:
		return derrors.Invalidf("%s is %d bytes, at most %d", AgentNameHeader, len(a.Name), MaxAgentNameLen)
	case !printable(a.Name):
		return derrors.Invalidf("%s must be printable UTF-8 text (no control characters)", AgentNameHeader)
	case len(a.Conversation) > MaxConversationIDLen:
		return derrors.Invalidf("%s is %d bytes, at most %d", ConversationIDHeader, len(a.Conversation), MaxConversationIDLen)
	case a.Conversation != "" && !conversationPattern.MatchString(a.Conversation):
		return derrors.Invalidf("%s %q: use letters, digits and . _ - @ / + : =, starting with a letter or digit", ConversationIDHeader, clipText(a.Conversation))
	}
	return nil
}

// MCPClientAgent is the agent an MCP client is when it declares none by
// header: its clientInfo name as the id (characters an id may not hold
// become '-'), its title (else its name) as the name, and its MCP session as
// the conversation. Nil when the client gave no usable name.
func MCPClientAgent(name, title, session string) *eval.Agent {
	id := agentIDFrom(name)
	if id == "" {
		return nil
	}
	display := strings.TrimSpace(title)
	if display == "" {
		display = strings.TrimSpace(name)
	}
	display = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, display)
	display = truncateUTF8(display, MaxAgentNameLen)
	a := &eval.Agent{ID: id, Name: display}
	if conversationPattern.MatchString(session) && len(session) <= MaxConversationIDLen {
		a.Conversation = session
	}
	return a
}

// agentIDFrom maps a free-form client name onto the id alphabet.
func agentIDFrom(name string) string {
	var b strings.Builder
	for _, r := range strings.TrimSpace(name) {
		switch {
		case r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._@/+-", r)):
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
		if b.Len() >= MaxAgentIDLen {
			break
		}
	}
	id := strings.TrimLeft(b.String(), "._@/+-")
	if len(id) > MaxAgentIDLen {
		id = id[:MaxAgentIDLen]
	}
	return id
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// clipText shortens a refused value for its message.
func clipText(s string) string { return truncateUTF8(s, 64) }
