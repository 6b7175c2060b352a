package scoring

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseClassWeights(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		in      string
		want    map[string]float64
		wantErr string
	}{
		{"Default", DefaultClassWeights, map[string]float64{HordeClass: 99, "always_on.llm.a6000": 1, "always_on.test": 0}, ""},
		{"SpacesAndTrailingComma", " a = 1.5 , b=0 ,", map[string]float64{"a": 1.5, "b": 0}, ""},
		{"Empty", "", nil, "none given"},
		{"NoEquals", "a", nil, "want class=weight"},
		{"NoClass", "=1", nil, "want class=weight"},
		{"Negative", "a=-1", nil, "finite number"},
		{"NotANumber", "a=NaN", nil, "finite number"},
		{"Twice", "a=1,a=2", nil, "given twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseClassWeights(tt.in)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestFormatClassWeightsRoundTrips(t *testing.T) {
	t.Parallel()

	w, err := ParseClassWeights(FormatClassWeights(DefaultParams().ClassWeights))
	require.NoError(t, err)
	require.Equal(t, DefaultParams().ClassWeights, w)
}

func TestParamsValidate(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		change  func(*Params)
		wantErr string
	}{
		{"Default", func(*Params) {}, ""},
		{"NoWeights", func(p *Params) { p.ClassWeights = nil }, "class weights"},
		{"NegativeExcused", func(p *Params) { p.ExcusedScore = -1 }, "excused score"},
		{"NoHordeClass", func(p *Params) { p.HordeClass = "" }, "horde class"},
		{"ZeroDancing", func(p *Params) { p.DancingMultiplier = 0 }, "dancing multiplier"},
		{"RatioBelowOne", func(p *Params) { p.DancingRatio = 0.5 }, "dancing ratio"},
		{"ZeroPenalty", func(p *Params) { p.NonPeakPenalty = 0 }, "non-peak penalty"},
		{"RatioAboveOne", func(p *Params) { p.NonPeakMinRatio = 2 }, "non-peak minimum ratio"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := DefaultParams()
			tt.change(&p)
			err := p.Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}
