package api

import (
	"bytes"
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// consoleFiles are the web console's page, style sheet and script: plain
// HTML, CSS and JavaScript, served as they are, with nothing fetched from
// elsewhere.
//
//go:embed console
var consoleFiles embed.FS

// consolePolicy keeps the console to its own origin: no script, style,
// image or connection goes anywhere else.
const consolePolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// consoleSettings is GET /console/settings.json: what the page must know
// of the server before it asks anything else.
type consoleSettings struct {
	Demo          bool   `json:"demo"`           // show the chat panel and the fault switches
	Feed          string `json:"feed"`           // the live feed's path; "": poll GET /v1/status
	ShowQuestions bool   `json:"show_questions"` // the feed carries question texts
	Version       string `json:"version"`        // the build's version
}

// consoleSettings returns the console's settings.json of s.
func (s *Server) consoleSettings() consoleSettings {
	return consoleSettings{Demo: s.demo != nil, Feed: "/v1/events", ShowQuestions: s.consoleOpts.ShowQuestions,
		Version: ReadBuild().Version}
}

// toConsole serves GET /: a redirect to the console.
func (s *Server) toConsole(c echo.Context) error {
	return c.Redirect(http.StatusFound, "/console")
}

// console serves GET /console and GET /console/{file}: the page, its
// files, and settings.json. They are public: the page holds no data, and
// asks the API for it with the key the operator types.
func (s *Server) console(c echo.Context) error {
	return serveConsole(c, s.consoleSettings())
}

// serveConsole serves the console file the request names, with set as
// its settings.json.
func serveConsole(c echo.Context, set consoleSettings) error {
	name := strings.TrimPrefix(c.Request().URL.Path, "/console")
	switch name {
	case "", "/":
		name = "index.html"
	case "/settings.json":
		consoleHeaders(c.Response().Header())
		return c.JSON(http.StatusOK, set)
	default:
		name = strings.TrimPrefix(name, "/")
	}
	body, err := consoleFile(name)
	if err != nil {
		return newError(http.StatusNotFound, CodeNotFound, "no such console file")
	}
	h := c.Response().Header()
	consoleHeaders(h)
	h.Set(echo.HeaderContentType, mime.TypeByExtension(path.Ext(name)))
	http.ServeContent(c.Response(), c.Request(), name, time.Time{}, bytes.NewReader(body))
	return nil
}

// consoleFile returns the console file name, a bare file name.
func consoleFile(name string) ([]byte, error) {
	if strings.Contains(name, "/") || !fs.ValidPath(name) {
		return nil, fs.ErrNotExist
	}
	return consoleFiles.ReadFile("console/" + name)
}

// consoleHeaders sets the headers of every console response: revalidate
// each time (the files change with the binary), and the content policy.
func consoleHeaders(h http.Header) {
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", consolePolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}
