package protocol

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVolumeVariants(t *testing.T) {
	t.Parallel()

	path := "data"
	tests := []struct {
		name   string
		volume Volume
		wire   string
	}{
		{name: "Inline", volume: &InlineVolume{Contents: "UEsDBA==", RelativePath: &path}, wire: `{"volume_type":"inline","contents":"UEsDBA==","relative_path":"data"}`},
		{name: "ZipURL", volume: &ZipURLVolume{Contents: "https://x/a.zip"}, wire: `{"volume_type":"zip_url","contents":"https://x/a.zip","relative_path":null}`},
		{name: "SingleFile", volume: &SingleFileVolume{URL: "https://x/f", RelativePath: "f"}, wire: `{"volume_type":"single_file","url":"https://x/f","relative_path":"f"}`},
		{name: "EmptyMulti", volume: &MultiVolume{}, wire: `{"volume_type":"multi_volume","volumes":[]}`},
		{name: "Huggingface", volume: &HuggingfaceVolume{RepoID: "r"}, wire: `{"volume_type":"huggingface_volume","repo_id":"r","repo_type":null,"revision":null,"relative_path":null,"allow_patterns":null,"token":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			wire, err := json.Marshal(tt.volume)
			require.NoError(t, err)
			require.Equal(t, tt.wire, string(wire))

			decoded, err := decodeVolume(wire, true)
			require.NoError(t, err)
			require.Equal(t, tt.volume.VolumeType(), decoded.VolumeType())
			again, err := json.Marshal(decoded)
			require.NoError(t, err)
			require.Equal(t, tt.wire, string(again))
		})
	}
}

func TestDecodeVolumeNullAndBadParts(t *testing.T) {
	t.Parallel()

	volume, err := decodeVolume([]byte(`null`), true)
	require.NoError(t, err)
	require.Nil(t, volume)

	_, err = decodeVolume([]byte(`{"volume_type":"multi_volume","volumes":[null]}`), true)
	require.Error(t, err)
	_, err = decodeVolume([]byte(`{"contents":"x"}`), true)
	require.Error(t, err)
}
