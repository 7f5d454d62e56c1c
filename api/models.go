package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// ModelID is the model GET /v1/models lists: what an OpenAI client puts in
// "model". Any value is accepted there; the pipeline chooses the models.
const ModelID = "ragfuse"

// modelInfo is one model of GET /v1/models, in OpenAI's shape.
type modelInfo struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // "model"
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// modelList is the body of GET /v1/models.
type modelList struct {
	Object string      `json:"object"` // "list"
	Data   []modelInfo `json:"data"`
}

func (s *Server) model() modelInfo {
	return modelInfo{ID: ModelID, Object: "model", Created: s.started.Unix(), OwnedBy: "ragfuse"}
}

// listModels serves GET /v1/models, so that chat UIs that list models before
// they ask find one.
func (s *Server) listModels(c echo.Context) error {
	return c.JSON(http.StatusOK, modelList{Object: "list", Data: []modelInfo{s.model()}})
}

// modelByID serves GET /v1/models/:id.
func (s *Server) modelByID(c echo.Context) error {
	if c.Param("id") != ModelID {
		return newError(http.StatusNotFound, CodeNotFound, "no such model (GET /v1/models lists them)")
	}
	return c.JSON(http.StatusOK, s.model())
}
