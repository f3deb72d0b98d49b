package faultproxy

import (
	"bufio"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readerOf(s string) *frameReader {
	// A small buffer makes lines and payloads cross buffer boundaries.
	return &frameReader{r: bufio.NewReaderSize(strings.NewReader(s), 16)}
}

func TestReplyFrames(t *testing.T) {
	frames := []struct {
		raw   string
		typ   byte
		elems []string // the string elements expected among the first three ("" for none)
	}{
		{"+OK\r\n", '+', []string{"OK"}},
		{"+\r\n", '+', []string{""}},
		{"-ERR wrong\r\n", '-', nil},
		{":-42\r\n", ':', nil},
		{"$5\r\nhello\r\n", '$', []string{"hello"}},
		{"$0\r\n\r\n", '$', []string{""}},
		{"$-1\r\n", '$', nil},
		{"*-1\r\n", '*', nil},
		{"_\r\n", '_', nil},
		{",3.14\r\n", ',', nil},
		{"#t\r\n", '#', nil},
		{"(3492890328409238509324850943850943825024385\r\n", '(', nil},
		{"!21\r\nSYNTAX invalid syntax\r\n", '!', nil},
		{"=15\r\ntxt:Some string\r\n", '=', nil},
		{"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$4\r\na\r\nb\r\n", '*', []string{"message", "ch", "a\r\nb"}},
		{">3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n", '>', []string{"subscribe", "a"}},
		{">4\r\n$8\r\npmessage\r\n$2\r\np*\r\n$2\r\npq\r\n$1\r\nx\r\n", '>', []string{"pmessage", "p*", "pq"}},
		{"%2\r\n+first\r\n:1\r\n+second\r\n*2\r\n:1\r\n~1\r\n_\r\n", '%', []string{"first", "", "second"}},
		{"~2\r\n+a\r\n+b\r\n", '~', []string{"a", "b"}},
		{"*2\r\n*2\r\n*0\r\n%0\r\n+x\r\n", '*', []string{"", "x"}},
		{"|1\r\n+ttl\r\n:3600\r\n*2\r\n:2039123\r\n$4\r\nabcd\r\n", '*', []string{"", "abcd"}},
		{"*1\r\n|1\r\n+key-popularity\r\n%0\r\n$1\r\nv\r\n", '*', []string{"v"}},
	}
	var all strings.Builder
	for _, f := range frames {
		all.WriteString(f.raw)
	}
	fr := readerOf(all.String())
	for _, want := range frames {
		got, err := fr.reply()
		require.NoError(t, err, want.raw)
		assert.Equal(t, want.raw, string(got.raw))
		assert.Equal(t, string(want.typ), string(got.typ), want.raw)
		for i, e := range want.elems {
			s, ok := got.elem(i)
			if e == "" && !ok {
				continue
			}
			assert.True(t, ok, "%q element %d", want.raw, i)
			assert.Equal(t, e, s, "%q element %d", want.raw, i)
		}
	}
	_, err := fr.reply()
	assert.ErrorIs(t, err, io.EOF)
}

func TestReplyFramesMalformed(t *testing.T) {
	for _, raw := range []string{
		"?1\r\n",
		"+OK\n",
		"$5\r\nhelloXY",
		"$x\r\n",
		"$-2\r\n",
		"!-1\r\n",
		"%-1\r\n",
		"_x\r\n",
		"$99999999999\r\n",
		strings.Repeat("*1\r\n", maxDepth+2) + ":1\r\n",
	} {
		_, err := readerOf(raw).reply()
		assert.ErrorIs(t, err, errProtocol, "%q", raw)
	}
	_, err := readerOf("*2\r\n:1\r\n").reply()
	assert.ErrorIs(t, err, io.EOF, "a frame cut short")
}

func TestCommands(t *testing.T) {
	in := "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n" +
		"PING\r\n" +
		"\r\n" +
		"*0\r\n" +
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n" +
		"  echo   hi  \n"
	fr := readerOf(in)
	for _, want := range []struct {
		args []string
		raw  string
	}{
		{[]string{"GET", "k"}, "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"},
		{[]string{"PING"}, "PING\r\n"},
		{nil, "\r\n"},
		{nil, "*0\r\n"},
		{[]string{"SET", "k", ""}, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"},
		{[]string{"echo", "hi"}, "  echo   hi  \n"},
	} {
		args, err := fr.command()
		require.NoError(t, err)
		if want.args == nil {
			assert.Empty(t, args)
		} else {
			assert.Equal(t, want.args, args)
		}
		assert.Equal(t, want.raw, string(fr.buf))
	}
	_, err := fr.command()
	assert.ErrorIs(t, err, io.EOF)

	for _, raw := range []string{"*1\r\n:1\r\n", "*1\r\n$-1\r\n", "*x\r\n", "*1\r\n$3\r\nab\r\n"} {
		_, err := readerOf(raw).command()
		assert.Error(t, err, "%q", raw)
	}
}
