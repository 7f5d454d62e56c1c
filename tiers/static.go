package tiers

import "context"

// DefaultStaticMessage holds the static tier's message by language, used
// when no message is configured.
var DefaultStaticMessage = map[string]string{
	"en": "Sorry, the assistant is temporarily unavailable. Please try again later or contact customer service.",
	"zh": "抱歉，AI助手服务暂时出现问题，请稍后重试或联系人工客服。",
}

// Static is a tier that always answers with a fixed message. It is safe
// for concurrent use.
type Static struct {
	name    string
	message string
}

var _ Tier = (*Static)(nil)

// NewStatic returns a static tier named name (default "static") that
// answers message; an empty message means DefaultStaticMessage in the
// question's language.
func NewStatic(name, message string) *Static {
	if name == "" {
		name = string(SourceStatic)
	}
	return &Static{name: name, message: message}
}

// Name returns the tier's name.
func (s *Static) Name() string { return s.name }

// Source returns SourceStatic.
func (s *Static) Source() Source { return SourceStatic }

// Answer returns the message. It never fails, even when ctx is done.
func (s *Static) Answer(_ context.Context, q Query) (Answer, error) {
	msg := s.message
	if msg == "" {
		msg = DefaultStaticMessage[DetectLanguage(q.Question)]
	}
	return Answer{Text: msg, Source: SourceStatic}, nil
}
