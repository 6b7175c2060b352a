package protocol

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"drover.dev/computehorde/internal/jsonwire"
)

// Volume is the data a job gets mounted: *InlineVolume, *ZipURLVolume, *SingleFileVolume,
// *MultiVolume or *HuggingfaceVolume. A nil Volume encodes as null.
type Volume interface {
	// VolumeType returns the volume_type discriminator.
	VolumeType() string
}

// The volume_type values.
const (
	VolumeTypeInline      = "inline"
	VolumeTypeZipURL      = "zip_url"
	VolumeTypeSingleFile  = "single_file"
	VolumeTypeMulti       = "multi_volume"
	VolumeTypeHuggingface = "huggingface_volume"
)

// InlineVolume carries a base64 zip in the message itself.
type InlineVolume struct {
	Contents     string  `json:"contents"`
	RelativePath *string `json:"relative_path"`
}

// ZipURLVolume points at a zip to download; Contents is its URL.
type ZipURLVolume struct {
	Contents     string  `json:"contents"`
	RelativePath *string `json:"relative_path"`
}

// SingleFileVolume downloads one file to RelativePath.
type SingleFileVolume struct {
	URL          string `json:"url"`
	RelativePath string `json:"relative_path"`
}

// MultiVolume combines volumes; its parts may not be multi volumes themselves.
type MultiVolume struct {
	Volumes List[Volume] `json:"volumes"`
}

// HuggingfaceVolume downloads a Hugging Face repository.
type HuggingfaceVolume struct {
	RepoID        string   `json:"repo_id"`
	RepoType      *string  `json:"repo_type"`
	Revision      *string  `json:"revision"`
	RelativePath  *string  `json:"relative_path"`
	AllowPatterns Patterns `json:"allow_patterns"`
	Token         *string  `json:"token"`
}

// VolumeType implements Volume.
func (InlineVolume) VolumeType() string { return VolumeTypeInline }

// VolumeType implements Volume.
func (ZipURLVolume) VolumeType() string { return VolumeTypeZipURL }

// VolumeType implements Volume.
func (SingleFileVolume) VolumeType() string { return VolumeTypeSingleFile }

// VolumeType implements Volume.
func (MultiVolume) VolumeType() string { return VolumeTypeMulti }

// VolumeType implements Volume.
func (HuggingfaceVolume) VolumeType() string { return VolumeTypeHuggingface }

// MarshalJSON writes volume_type first.
func (v InlineVolume) MarshalJSON() ([]byte, error) {
	type plain InlineVolume
	return jsonwire.MarshalTagged("volume_type", v.VolumeType(), plain(v))
}

// MarshalJSON writes volume_type first.
func (v ZipURLVolume) MarshalJSON() ([]byte, error) {
	type plain ZipURLVolume
	return jsonwire.MarshalTagged("volume_type", v.VolumeType(), plain(v))
}

// MarshalJSON writes volume_type first.
func (v SingleFileVolume) MarshalJSON() ([]byte, error) {
	type plain SingleFileVolume
	return jsonwire.MarshalTagged("volume_type", v.VolumeType(), plain(v))
}

// MarshalJSON writes volume_type first.
func (v MultiVolume) MarshalJSON() ([]byte, error) {
	type plain MultiVolume
	return jsonwire.MarshalTagged("volume_type", v.VolumeType(), plain(v))
}

// MarshalJSON writes volume_type first.
func (v HuggingfaceVolume) MarshalJSON() ([]byte, error) {
	type plain HuggingfaceVolume
	return jsonwire.MarshalTagged("volume_type", v.VolumeType(), plain(v))
}

// UnmarshalJSON requires contents.
func (v *InlineVolume) UnmarshalJSON(data []byte) error {
	type plain InlineVolume
	return unmarshalRequired(data, "volume_type", (*plain)(v), "contents")
}

// UnmarshalJSON requires contents.
func (v *ZipURLVolume) UnmarshalJSON(data []byte) error {
	type plain ZipURLVolume
	return unmarshalRequired(data, "volume_type", (*plain)(v), "contents")
}

// UnmarshalJSON requires url and relative_path.
func (v *SingleFileVolume) UnmarshalJSON(data []byte) error {
	type plain SingleFileVolume
	return unmarshalRequired(data, "volume_type", (*plain)(v), "url", "relative_path")
}

// UnmarshalJSON requires repo_id.
func (v *HuggingfaceVolume) UnmarshalJSON(data []byte) error {
	type plain HuggingfaceVolume
	return unmarshalRequired(data, "volume_type", (*plain)(v), "repo_id")
}

// UnmarshalJSON requires volumes and decodes each part by its volume_type.
func (v *MultiVolume) UnmarshalJSON(data []byte) error {
	var w struct {
		Volumes []json.RawMessage `json:"volumes"`
	}
	if err := unmarshalRequired(data, "volume_type", &w, "volumes"); err != nil {
		return err
	}
	volumes := make(List[Volume], 0, len(w.Volumes))
	for _, raw := range w.Volumes {
		part, err := decodeVolume(raw, false)
		if err != nil {
			return err
		}
		if part == nil {
			return &jsonwire.FieldError{Field: "volumes[]"}
		}
		volumes = append(volumes, part)
	}
	v.Volumes = volumes
	return nil
}

// decodeVolume reads a volume by its volume_type; null gives nil. Nesting multi volumes is
// refused, which also bounds decoding work to the frame size.
func decodeVolume(data []byte, allowMulti bool) (Volume, error) {
	if jsonwire.IsNull(data) {
		return nil, nil
	}
	tag, err := readTag(data, "volume_type")
	if err != nil {
		return nil, err
	}
	var v interface {
		Volume
		json.Unmarshaler
	}
	switch tag {
	case VolumeTypeInline:
		v = new(InlineVolume)
	case VolumeTypeZipURL:
		v = new(ZipURLVolume)
	case VolumeTypeSingleFile:
		v = new(SingleFileVolume)
	case VolumeTypeHuggingface:
		v = new(HuggingfaceVolume)
	case VolumeTypeMulti:
		if allowMulti {
			v = new(MultiVolume)
		}
	}
	if v == nil {
		return nil, &jsonwire.ValueError{Field: "volume_type", Value: tag}
	}
	if err := v.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	return v, nil
}

// readTag returns the required string discriminator of an object.
func readTag(data []byte, field string) (string, error) {
	o, err := jsonwire.ParseObject(data)
	if err != nil {
		return "", err
	}
	return tagOf(o, field)
}

// tagOf returns the required string discriminator of an object already parsed. A plain string
// (no escapes, valid UTF-8), as every tag on the wire is, is read without json.Unmarshal.
func tagOf(o jsonwire.Object, field string) (string, error) {
	value, ok := o.Lookup(field)
	if !ok || jsonwire.IsNull(value) {
		return "", &jsonwire.FieldError{Field: field, Missing: !ok}
	}
	if n := len(value); n >= 2 && value[0] == '"' && bytes.IndexByte(value, '\\') < 0 && utf8.Valid(value) {
		return string(value[1 : n-1]), nil
	}
	var tag string
	if err := json.Unmarshal(value, &tag); err != nil {
		return "", &json.UnmarshalTypeError{Value: jsonKind(value), Type: stringType, Field: field}
	}
	return tag, nil
}

// unmarshalRequired checks the required fields, then decodes data, an object whose
// discriminator is tag, into dst.
func unmarshalRequired(data []byte, tag string, dst any, fields ...string) error {
	o, err := jsonwire.ParseObject(data)
	if err != nil {
		return err
	}
	if err := o.Require(fields...); err != nil {
		return err
	}
	return o.Decode(dst, tag)
}
