package populate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// FunctionRequest is what an HTTP function make receives: the table and the key to make.
type FunctionRequest struct {
	Table string `json:"table"`
	Key   Key    `json:"key"`
}

// FunctionResponse is what an HTTP function answers: the rows to insert with status 200, or an
// error (any other status) recorded in the jobs table as "<class>: <message>" with its stack.
type FunctionResponse struct {
	Rows  []Row      `json:"rows,omitempty"`
	Error *MakeError `json:"error,omitempty"`
}

// maxFunctionResponse bounds what an HTTP function may answer.
const maxFunctionResponse = 64 << 20

// callFunction POSTs key to t's function URL and returns the rows it answers.
func (e *Engine) callFunction(ctx context.Context, t *Table, key Key) ([]Row, error) {
	body, err := json.Marshal(FunctionRequest{Table: t.Name, Key: key})
	if err != nil {
		return nil, fmt.Errorf("encode key of %s: %w", t.Name, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.FunctionURL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("function request of %s: %w", t.Name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("call function of %s: %w", t.Name, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxFunctionResponse+1))
	if err != nil {
		return nil, fmt.Errorf("read function answer of %s: %w", t.Name, err)
	}
	if len(raw) > maxFunctionResponse {
		return nil, &MakeError{Class: "FunctionError", Message: fmt.Sprintf("answer exceeds %d bytes", maxFunctionResponse)}
	}
	return decodeFunction(resp.StatusCode, raw)
}

func decodeFunction(status int, raw []byte) ([]Row, error) {
	var out FunctionResponse
	jsonErr := json.Unmarshal(raw, &out)
	switch {
	case out.Error != nil:
		return nil, out.Error
	case status != http.StatusOK:
		return nil, &MakeError{Class: "FunctionError", Message: fmt.Sprintf("HTTP %d: %.500s", status, raw)}
	case jsonErr != nil:
		return nil, &MakeError{Class: "FunctionError", Message: "answer is not JSON: " + jsonErr.Error()}
	}
	return out.Rows, nil
}
