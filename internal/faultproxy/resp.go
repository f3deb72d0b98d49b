package faultproxy

import (
	"bufio"
	"errors"
	"io"
	"slices"
	"strings"
)

const (
	// maxBulk is the longest bulk string accepted in either direction,
	// Redis's default proto-max-bulk-len.
	maxBulk = 512 << 20
	// maxLine bounds a line (a simple string, an error, an inline command).
	maxLine = 1 << 20
	// maxArgs bounds the number of arguments of one command, as Redis does.
	maxArgs = 1 << 20
	// maxDepth bounds the nesting of aggregates in a reply.
	maxDepth = 64
	// keepBuf is the largest frame buffer kept for reuse between frames.
	keepBuf = 1 << 20
)

// errProtocol is returned for bytes that are not valid RESP. The connection
// that carried them is closed.
var errProtocol = errors.New("faultproxy: malformed RESP")

// span locates a string's payload in a frame's bytes; start < 0 means the
// value was not a simple or bulk string.
type span struct{ start, end int }

// noSpan is the span of a value that is not a string.
var noSpan = span{-1, -1}

// frame is one complete server-to-client value: a reply or a push,
// including any attribute before it.
type frame struct {
	raw []byte // the bytes as received; valid until the next read
	typ byte   // the type byte of the value after any attribute
	// elems locate the first three elements of an aggregate (or the
	// value itself, for a simple or bulk string, in elems[0]).
	elems [3]span
}

// elem returns element i of f if it is a string, and whether it is.
func (f *frame) elem(i int) (string, bool) {
	s := f.elems[i]
	if s.start < 0 {
		return "", false
	}
	return string(f.raw[s.start:s.end]), true
}

// elemIs reports whether element i of f is the string want, without
// allocating.
func (f *frame) elemIs(i int, want string) bool {
	s := f.elems[i]
	return s.start >= 0 && string(f.raw[s.start:s.end]) == want
}

// isError reports whether f is an error reply.
func (f *frame) isError() bool { return f.typ == '-' || f.typ == '!' }

// frameReader reads RESP values from r, collecting the raw bytes of the
// current one in buf so that they can be forwarded unchanged.
type frameReader struct {
	r   *bufio.Reader
	buf []byte
}

// reset starts a new frame.
func (fr *frameReader) reset() {
	if cap(fr.buf) > keepBuf {
		fr.buf = nil
	}
	fr.buf = fr.buf[:0]
}

// line appends one line, up to and including '\n', to buf and returns the
// offset where it starts.
func (fr *frameReader) line() (int, error) {
	start := len(fr.buf)
	for {
		chunk, err := fr.r.ReadSlice('\n')
		fr.buf = append(fr.buf, chunk...)
		if err == nil {
			return start, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return 0, err
		}
		if len(fr.buf)-start > maxLine {
			return 0, errProtocol
		}
	}
}

// crlfLine is line for the lines of RESP proper, which end in "\r\n"; it
// returns the line's content without its type byte and terminator.
func (fr *frameReader) crlfLine() (typ byte, body []byte, start int, err error) {
	start, err = fr.line()
	if err != nil {
		return 0, nil, 0, err
	}
	l := fr.buf[start:]
	if len(l) < 3 || l[len(l)-2] != '\r' {
		return 0, nil, 0, errProtocol
	}
	return l[0], l[1 : len(l)-2], start, nil
}

// payload appends n bytes and the "\r\n" after them to buf and returns the
// span of the n bytes.
func (fr *frameReader) payload(n int) (span, error) {
	if n > maxBulk {
		return noSpan, errProtocol
	}
	off := len(fr.buf)
	fr.buf = slices.Grow(fr.buf, n+2)[:off+n+2]
	if _, err := io.ReadFull(fr.r, fr.buf[off:]); err != nil {
		return noSpan, err
	}
	if fr.buf[off+n] != '\r' || fr.buf[off+n+1] != '\n' {
		return noSpan, errProtocol
	}
	return span{off, off + n}, nil
}

// parseLen parses the decimal length or count of a RESP header; -1 is the
// RESP2 null.
func parseLen(b []byte) (int, error) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 10 {
		return 0, errProtocol
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errProtocol
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		if n != 1 {
			return 0, errProtocol
		}
		return -1, nil
	}
	return n, nil
}

// reply reads one server-to-client frame. The frame's raw bytes are valid
// until the next call.
func (fr *frameReader) reply() (frame, error) {
	fr.reset()
	f := frame{elems: [3]span{noSpan, noSpan, noSpan}}
	typ, s, err := fr.value(0, &f.elems)
	if err != nil {
		return frame{}, err
	}
	if s.start >= 0 {
		f.elems[0] = s
	}
	f.typ, f.raw = typ, fr.buf
	return f, nil
}

// value appends one RESP2 or RESP3 value to buf, with any attribute that
// precedes it. It returns the value's type and, for a simple or bulk
// string, its span. For an aggregate, elems (if not nil) receives the
// spans of its first three elements.
func (fr *frameReader) value(depth int, elems *[3]span) (byte, span, error) {
	if depth > maxDepth {
		return 0, noSpan, errProtocol
	}
	for {
		typ, body, start, err := fr.crlfLine()
		if err != nil {
			return 0, noSpan, err
		}
		switch typ {
		case '+':
			return typ, span{start + 1, start + 1 + len(body)}, nil
		case '-', ':', ',', '#', '(':
			return typ, noSpan, nil
		case '_':
			if len(body) != 0 {
				return 0, noSpan, errProtocol
			}
			return typ, noSpan, nil
		case '$', '!', '=':
			n, err := parseLen(body)
			if err != nil {
				return 0, noSpan, err
			}
			if n < 0 {
				if typ != '$' {
					return 0, noSpan, errProtocol
				}
				return typ, noSpan, nil // RESP2 null bulk string
			}
			s, err := fr.payload(n)
			if err != nil {
				return 0, noSpan, err
			}
			if typ != '$' {
				s = noSpan
			}
			return typ, s, nil
		case '*', '~', '>', '%', '|':
			n, err := parseLen(body)
			if err != nil {
				return 0, noSpan, err
			}
			if n < 0 {
				if typ != '*' {
					return 0, noSpan, errProtocol
				}
				return typ, noSpan, nil // RESP2 null array
			}
			if typ == '%' || typ == '|' {
				n *= 2
			}
			for i := range n {
				_, s, err := fr.value(depth+1, nil)
				if err != nil {
					return 0, noSpan, err
				}
				if elems != nil && i < len(elems) && typ != '|' {
					elems[i] = s
				}
			}
			if typ == '|' {
				continue // an attribute: the value it describes follows
			}
			return typ, noSpan, nil
		default:
			return 0, noSpan, errProtocol
		}
	}
}

// command reads one client-to-server command: a RESP array of bulk strings,
// or an inline command (a line of words). Its raw bytes are left in buf.
// An empty command (an empty line, or an array of length 0 or -1) returns
// no arguments: Redis does not answer it.
func (fr *frameReader) command() ([]string, error) {
	fr.reset()
	b, err := fr.r.Peek(1)
	if err != nil {
		return nil, err
	}
	if b[0] != '*' {
		start, err := fr.line()
		if err != nil {
			return nil, err
		}
		return strings.Fields(string(fr.buf[start:])), nil
	}
	_, body, _, err := fr.crlfLine()
	if err != nil {
		return nil, err
	}
	n, err := parseLen(body)
	if err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	if n > maxArgs {
		return nil, errProtocol
	}
	args := make([]string, 0, min(n, 64))
	for range n {
		typ, body, _, err := fr.crlfLine()
		if err != nil {
			return nil, err
		}
		if typ != '$' {
			return nil, errProtocol
		}
		m, err := parseLen(body)
		if err != nil || m < 0 {
			return nil, errProtocol
		}
		s, err := fr.payload(m)
		if err != nil {
			return nil, err
		}
		args = append(args, string(fr.buf[s.start:s.end]))
	}
	return args, nil
}
