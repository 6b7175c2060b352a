package protocol

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOutputUploadVariants pins each variant's wire form with upstream's defaults: form_fields
// and signed_headers are null when unset, as pydantic writes them.
func TestOutputUploadVariants(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		upload OutputUpload
		wire   string
	}{
		{name: "ZipPost", upload: &ZipAndHTTPPostUpload{URL: "u"}, wire: `{"output_upload_type":"zip_and_http_post","url":"u","form_fields":null}`},
		{name: "ZipPut", upload: &ZipAndHTTPPutUpload{URL: "u"}, wire: `{"output_upload_type":"zip_and_http_put","url":"u"}`},
		{name: "SinglePost", upload: &SingleFilePostUpload{URL: "u", RelativePath: "f"}, wire: `{"output_upload_type":"single_file_post","url":"u","form_fields":null,"relative_path":"f","signed_headers":null}`},
		{name: "SinglePut", upload: &SingleFilePutUpload{URL: "u", RelativePath: "f", SignedHeaders: map[string]string{"h": "v"}}, wire: `{"output_upload_type":"single_file_put","url":"u","relative_path":"f","signed_headers":{"h":"v"}}`},
		{name: "Multi", upload: &MultiUpload{Uploads: List[OutputUpload]{&SingleFilePutUpload{URL: "u", RelativePath: "f"}}}, wire: `{"output_upload_type":"multi_upload","uploads":[{"output_upload_type":"single_file_put","url":"u","relative_path":"f","signed_headers":null}],"system_output":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			wire, err := json.Marshal(tt.upload)
			require.NoError(t, err)
			require.Equal(t, tt.wire, string(wire))

			decoded, err := decodeOutputUpload(wire, anyUploadType...)
			require.NoError(t, err)
			again, err := json.Marshal(decoded)
			require.NoError(t, err)
			require.Equal(t, tt.wire, string(again))
		})
	}
}

func TestMultiUploadRejectsWrongSystemOutput(t *testing.T) {
	t.Parallel()

	_, err := decodeOutputUpload([]byte(`{"output_upload_type":"multi_upload","uploads":[],"system_output":{"output_upload_type":"single_file_put","url":"u","relative_path":"f"}}`), anyUploadType...)
	require.Error(t, err)
}
