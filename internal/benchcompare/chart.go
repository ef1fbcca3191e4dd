package benchcompare

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// chartColours are the systems' bar colours, in the report's order.
var chartColours = map[string]color.RGBA{
	SystemBareLoop:        {0x99, 0x99, 0x99, 0xff},
	SystemStoat:           {0x1f, 0x77, 0xb4, 0xff},
	SystemKStreams:        {0xff, 0x7f, 0x0e, 0xff},
	SystemKStreamsNoCache: {0xd6, 0x27, 0x28, 0xff},
}

// WriteChart writes broker's throughput as a PNG bar chart to path: one
// group of bars per topology, one bar per system at its median
// records/s.
func (r *Report) WriteChart(broker, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Throughput, %s broker (median records/s, exactly-once)", broker)
	p.Y.Label.Text = "records/s"
	p.Y.Min = 0
	rows := r.Rows(broker)
	systems := []string{SystemBareLoop, SystemStoat, SystemKStreams, SystemKStreamsNoCache}
	width := vg.Points(14)
	top := 0.0
	for _, row := range rows {
		top = max(top, row.Rate.Median)
	}
	// Headroom for the legend above the tallest bar.
	p.Y.Max = top * 1.3
	for i, sys := range systems {
		vals := make(plotter.Values, len(Topologies))
		any := false
		for j, topo := range Topologies {
			for _, row := range rows {
				if row.Topology == topo && row.System == sys {
					vals[j] = row.Rate.Median
					any = true
				}
			}
		}
		if !any {
			continue
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return fmt.Errorf("chart %s: %w", broker, err)
		}
		bars.Color = chartColours[sys]
		bars.LineStyle.Width = 0
		bars.Offset = width * vg.Length(float64(i)-1.5)
		p.Add(bars)
		p.Legend.Add(sys, bars)
	}
	p.Legend.Top = true
	p.NominalX(Topologies...)
	if err := p.Save(8*vg.Inch, 4*vg.Inch, path); err != nil {
		return fmt.Errorf("chart %s: save %s: %w", broker, path, err)
	}
	return nil
}
