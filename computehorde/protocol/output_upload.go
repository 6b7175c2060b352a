package protocol

import (
	"encoding/json"
	"slices"

	"drover.dev/computehorde/internal/jsonwire"
)

// OutputUpload says where a job's output goes: *ZipAndHTTPPostUpload, *ZipAndHTTPPutUpload,
// *SingleFilePostUpload, *SingleFilePutUpload or *MultiUpload. A nil OutputUpload encodes as
// null.
type OutputUpload interface {
	// OutputUploadType returns the output_upload_type discriminator.
	OutputUploadType() string
}

// The output_upload_type values.
const (
	UploadTypeZipAndHTTPPost = "zip_and_http_post"
	UploadTypeZipAndHTTPPut  = "zip_and_http_put"
	UploadTypeSingleFilePost = "single_file_post"
	UploadTypeSingleFilePut  = "single_file_put"
	UploadTypeMulti          = "multi_upload"
)

// ZipAndHTTPPostUpload posts the zipped output directory as a form.
type ZipAndHTTPPostUpload struct {
	URL string `json:"url"`
	// FormFields is optional; unlike V0JobRequest.Env, upstream defaults it to null, so a nil
	// FormFields encodes as null.
	FormFields StringMap `json:"form_fields"`
}

// ZipAndHTTPPutUpload puts the zipped output directory.
type ZipAndHTTPPutUpload struct {
	URL string `json:"url"`
}

// SingleFilePostUpload posts one output file as a form.
type SingleFilePostUpload struct {
	URL string `json:"url"`
	// FormFields is optional; a nil FormFields encodes as null, upstream's default.
	FormFields    StringMap         `json:"form_fields"`
	RelativePath  string            `json:"relative_path"`
	SignedHeaders map[string]string `json:"signed_headers"`
}

// SingleFilePutUpload puts one output file.
type SingleFilePutUpload struct {
	URL           string            `json:"url"`
	RelativePath  string            `json:"relative_path"`
	SignedHeaders map[string]string `json:"signed_headers"`
}

// MultiUpload uploads several single files, and optionally the zipped output directory as
// SystemOutput (a zip post or put).
type MultiUpload struct {
	Uploads      List[OutputUpload] `json:"uploads"`
	SystemOutput OutputUpload       `json:"system_output"`
}

// OutputUploadType implements OutputUpload.
func (ZipAndHTTPPostUpload) OutputUploadType() string { return UploadTypeZipAndHTTPPost }

// OutputUploadType implements OutputUpload.
func (ZipAndHTTPPutUpload) OutputUploadType() string { return UploadTypeZipAndHTTPPut }

// OutputUploadType implements OutputUpload.
func (SingleFilePostUpload) OutputUploadType() string { return UploadTypeSingleFilePost }

// OutputUploadType implements OutputUpload.
func (SingleFilePutUpload) OutputUploadType() string { return UploadTypeSingleFilePut }

// OutputUploadType implements OutputUpload.
func (MultiUpload) OutputUploadType() string { return UploadTypeMulti }

// MarshalJSON writes output_upload_type first, and a nil FormFields as null (upstream's default).
func (u ZipAndHTTPPostUpload) MarshalJSON() ([]byte, error) {
	return jsonwire.MarshalTagged("output_upload_type", u.OutputUploadType(), struct {
		URL        string            `json:"url"`
		FormFields map[string]string `json:"form_fields"`
	}{u.URL, u.FormFields})
}

// MarshalJSON writes output_upload_type first.
func (u ZipAndHTTPPutUpload) MarshalJSON() ([]byte, error) {
	type plain ZipAndHTTPPutUpload
	return jsonwire.MarshalTagged("output_upload_type", u.OutputUploadType(), plain(u))
}

// MarshalJSON writes output_upload_type first, and a nil FormFields as null (upstream's default).
func (u SingleFilePostUpload) MarshalJSON() ([]byte, error) {
	return jsonwire.MarshalTagged("output_upload_type", u.OutputUploadType(), struct {
		URL           string            `json:"url"`
		FormFields    map[string]string `json:"form_fields"`
		RelativePath  string            `json:"relative_path"`
		SignedHeaders map[string]string `json:"signed_headers"`
	}{u.URL, u.FormFields, u.RelativePath, u.SignedHeaders})
}

// MarshalJSON writes output_upload_type first.
func (u SingleFilePutUpload) MarshalJSON() ([]byte, error) {
	type plain SingleFilePutUpload
	return jsonwire.MarshalTagged("output_upload_type", u.OutputUploadType(), plain(u))
}

// MarshalJSON writes output_upload_type first.
func (u MultiUpload) MarshalJSON() ([]byte, error) {
	type plain MultiUpload
	return jsonwire.MarshalTagged("output_upload_type", u.OutputUploadType(), plain(u))
}

// UnmarshalJSON requires url.
func (u *ZipAndHTTPPostUpload) UnmarshalJSON(data []byte) error {
	type plain ZipAndHTTPPostUpload
	return unmarshalRequired(data, "output_upload_type", (*plain)(u), "url")
}

// UnmarshalJSON requires url.
func (u *ZipAndHTTPPutUpload) UnmarshalJSON(data []byte) error {
	type plain ZipAndHTTPPutUpload
	return unmarshalRequired(data, "output_upload_type", (*plain)(u), "url")
}

// UnmarshalJSON requires url and relative_path.
func (u *SingleFilePostUpload) UnmarshalJSON(data []byte) error {
	type plain SingleFilePostUpload
	return unmarshalRequired(data, "output_upload_type", (*plain)(u), "url", "relative_path")
}

// UnmarshalJSON requires url and relative_path.
func (u *SingleFilePutUpload) UnmarshalJSON(data []byte) error {
	type plain SingleFilePutUpload
	return unmarshalRequired(data, "output_upload_type", (*plain)(u), "url", "relative_path")
}

// UnmarshalJSON requires uploads, each a single-file upload; system_output is a zip upload or
// null.
func (u *MultiUpload) UnmarshalJSON(data []byte) error {
	var w struct {
		Uploads      []json.RawMessage `json:"uploads"`
		SystemOutput json.RawMessage   `json:"system_output"`
	}
	if err := unmarshalRequired(data, "output_upload_type", &w, "uploads"); err != nil {
		return err
	}
	uploads := make(List[OutputUpload], 0, len(w.Uploads))
	for _, raw := range w.Uploads {
		upload, err := decodeOutputUpload(raw, UploadTypeSingleFilePost, UploadTypeSingleFilePut)
		if err != nil {
			return err
		}
		if upload == nil {
			return &jsonwire.FieldError{Field: "uploads[]"}
		}
		uploads = append(uploads, upload)
	}
	system, err := decodeOutputUpload(w.SystemOutput, UploadTypeZipAndHTTPPost, UploadTypeZipAndHTTPPut)
	if err != nil {
		return err
	}
	*u = MultiUpload{Uploads: uploads, SystemOutput: system}
	return nil
}

// decodeOutputUpload reads an upload whose output_upload_type is one of allowed; null gives
// nil.
func decodeOutputUpload(data []byte, allowed ...string) (OutputUpload, error) {
	if jsonwire.IsNull(data) {
		return nil, nil
	}
	tag, err := readTag(data, "output_upload_type")
	if err != nil {
		return nil, err
	}
	var u interface {
		OutputUpload
		json.Unmarshaler
	}
	switch tag {
	case UploadTypeZipAndHTTPPost:
		u = new(ZipAndHTTPPostUpload)
	case UploadTypeZipAndHTTPPut:
		u = new(ZipAndHTTPPutUpload)
	case UploadTypeSingleFilePost:
		u = new(SingleFilePostUpload)
	case UploadTypeSingleFilePut:
		u = new(SingleFilePutUpload)
	case UploadTypeMulti:
		u = new(MultiUpload)
	}
	if u == nil || !slices.Contains(allowed, tag) {
		return nil, &jsonwire.ValueError{Field: "output_upload_type", Value: tag}
	}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	return u, nil
}

// anyUploadType lists every output_upload_type, for the top-level output_upload field.
var anyUploadType = []string{UploadTypeZipAndHTTPPost, UploadTypeZipAndHTTPPut, UploadTypeSingleFilePost, UploadTypeSingleFilePut, UploadTypeMulti}
