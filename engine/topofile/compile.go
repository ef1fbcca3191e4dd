package topofile

import (
	"fmt"
	"reflect"
	"regexp"
	"time"

	"github.com/expr-lang/expr/types"
	"go.yaml.in/yaml/v3"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/watermark"
)

// compiler walks a file's YAML nodes and calls the DSL as it goes, so
// generated node names follow the file's order as they would follow the
// order of Go calls.
type compiler struct {
	file    string
	baseDir string
	errs    []error
	b       *dsl.Builder

	appID       string
	description string
	config      map[string]string
	defKey      *dynSerde
	defValue    *dynSerde

	// names holds sources, tables, pipelines and branches; a nil flow is a
	// pipeline that ends in a sink or a split.
	names   map[string]flow
	defined map[string]*yaml.Node
}

func (c *compiler) errf(n *yaml.Node, format string, args ...any) {
	line, col := 1, 1
	if n != nil && n.Line > 0 {
		line, col = n.Line, n.Column
	}
	c.errAt(line, col, format, args...)
}

func (c *compiler) errAt(line, col int, format string, args ...any) {
	if len(c.errs) < maxErrors {
		c.errs = append(c.errs, &Error{File: c.file, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)})
	}
}

// validName is what a source, table or pipeline may be called: it is
// referred to from other fields, and a dot joins a pipeline's name to its
// branches'.
var validName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*$`)

func (c *compiler) define(name string, at *yaml.Node, f flow) {
	if prev, dup := c.defined[name]; dup {
		c.errf(at, "name %q is already defined at line %d", name, prev.Line)
		return
	}
	c.defined[name], c.names[name] = at, f
}

// lookup finds a flow by name for a field reading it. A pipeline with
// errors is not found, without a second error.
func (c *compiler) lookup(n *yaml.Node, name, what string) (flow, bool) {
	at, ok := c.defined[name]
	if !ok {
		c.errf(n, "%s: no source, table or pipeline is called %q (names must be defined before they are used)", what, name)
		return nil, false
	}
	f := c.names[name]
	if f == nil {
		c.errf(n, "%s: pipeline %q (line %d) ends in a sink or a split and has no result to read", what, name, at.Line)
		return nil, false
	}
	if _, bad := f.(poisoned); bad {
		return nil, false
	}
	return f, true
}

// lookupAll is lookup for each of names, stopping at the first not found.
func (c *compiler) lookupAll(n *yaml.Node, names []string, what string) ([]flow, bool) {
	flows := make([]flow, 0, len(names))
	for _, name := range names {
		f, ok := c.lookup(n, name, what)
		if !ok {
			return nil, false
		}
		flows = append(flows, f)
	}
	return flows, true
}

var topLevel = []string{"application-id", "description", "config", "sources", "tables", "global-tables", "pipelines"}

// compile compiles the document root.
func (c *compiler) compile(root *yaml.Node) {
	f, ok := c.mapping(root, "topology file", topLevel...)
	if !ok {
		return
	}
	if c.appID, ok = c.requiredString(f, root, "application-id", "topology file"); !ok {
		return
	}
	if d := f.get("description"); d != nil {
		c.description, _ = c.scalar(d, "description")
	}
	c.compileConfig(f.get("config"))
	for _, k := range f.order {
		switch k {
		case "sources":
			c.compileSources(f.get(k), streamSource)
		case "tables":
			c.compileSources(f.get(k), tableSource)
		case "global-tables":
			c.compileSources(f.get(k), globalSource)
		}
	}
	if p := f.get("pipelines"); p != nil {
		c.compilePipelines(p)
	}
	if len(c.errs) == 0 && len(c.names) == 0 {
		c.errf(root, "topology file: defines no source or table: add a sources section")
	}
}

func (c *compiler) compileConfig(n *yaml.Node) {
	c.config = map[string]string{}
	if n != nil {
		f, ok := c.mapping(n, "config")
		if !ok {
			return
		}
		for _, k := range f.order {
			v, ok := c.scalar(f.get(k), "config "+k)
			if ok {
				c.config[k] = v
			}
		}
	}
	if id, ok := c.config[config.ApplicationID]; ok && id != c.appID {
		c.errf(f0(n, config.ApplicationID), "config %s %q differs from application-id %q: give it once, as application-id", config.ApplicationID, id, c.appID)
	}
	c.config[config.ApplicationID] = c.appID
	c.defKey, c.defValue = c.defaultSerde(n, config.DefaultKeySerde, "string"), c.defaultSerde(n, config.DefaultValueSerde, "json")
}

// f0 finds the value node of key k in mapping n, for errors.
func f0(n *yaml.Node, k string) *yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return n
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == k {
			return n.Content[i+1]
		}
	}
	return n
}

// defaultSerde is the serde of a flow whose serde the file never
// declared: the configured default, else fallback.
func (c *compiler) defaultSerde(cfgNode *yaml.Node, key, fallback string) *dynSerde {
	name := fallback
	if v, ok := c.config[key]; ok {
		name = v
	}
	info, err := namedSerde(name)
	if err != nil {
		c.errf(f0(cfgNode, key), "config %s: %v", key, err)
		info, _ = namedSerde(fallback)
	}
	if _, set := c.config[key]; set {
		// The build reads the default too, and knows canonical names only.
		c.config[key] = info.serde.Name()
	}
	return info.serde
}

var sourceFields = []string{"topic", "topics", "key-serde", "value-serde", "timestamp", "watermark", "offset-reset", "name"}

// sourceKind is what a section of named inputs defines.
type sourceKind int

const (
	streamSource sourceKind = iota
	tableSource
	globalSource
)

// compileSources adds each source (table, global table) in the order
// written.
func (c *compiler) compileSources(n *yaml.Node, kind sourceKind) {
	what, one := "sources", "source"
	allowed := sourceFields
	switch kind {
	case tableSource:
		what, one = "tables", "table"
		allowed = append([]string{"store"}, sourceFields...)
	case globalSource:
		what, one = "global-tables", "global table"
		allowed = globalTableFields
	}
	f, ok := c.mapping(n, what)
	if !ok {
		return
	}
	for _, name := range f.order {
		kn, vn := f.keys[name], f.get(name)
		if !validName.MatchString(name) {
			c.errf(kn, "%s: name %q must be letters, digits, '_' and '-'", what, name)
			continue
		}
		sf, ok := c.mapping(vn, one+" "+name, allowed...)
		if !ok {
			continue
		}
		if fl, ok := c.source(name, vn, sf, kind); ok {
			c.define(name, kn, fl)
		}
	}
}

func (c *compiler) source(name string, n *yaml.Node, f fields, kind sourceKind) (flow, bool) {
	what := "source " + name
	switch kind {
	case tableSource:
		what = "table " + name
	case globalSource:
		what = "global table " + name
	}
	var topics []string
	switch {
	case f.has("topic") && f.has("topics"):
		c.errf(f.key("topics"), "%s: give topic or topics, not both", what)
		return nil, false
	case f.has("topic"):
		t, ok := c.requiredString(f, n, "topic", what)
		if !ok {
			return nil, false
		}
		topics = []string{t}
	case f.has("topics"):
		if kind != streamSource {
			c.errf(f.key("topics"), "%s: a table reads one topic: use topic", what)
			return nil, false
		}
		ts, ok := c.stringList(f.get("topics"), what+" topics")
		if !ok {
			return nil, false
		}
		topics = ts
	default:
		c.errf(n, "%s: missing field \"topic\"", what)
		return nil, false
	}
	ks, kt, okK := c.sourceSerde(f, "key-serde", what, c.defKey)
	vs, vt, okV := c.sourceSerde(f, "value-serde", what, c.defValue)
	info := flowInfo{keySerde: ks, keyType: kt, valueSerde: vs, valueType: vt}
	ok := okK && okV
	consumed := dsl.ConsumedWith[any, any](info.keySerde, info.valueSerde)
	if tn := f.get("timestamp"); tn != nil {
		p, good := c.compileExpr(tn, what+" timestamp", recordScope(&info), false)
		if good {
			if t := p.resultType(); t != nil && !timestampType(t) {
				c.errf(tn, "%s timestamp %q: result is a %s; expected epoch milliseconds (a number), a time or an RFC 3339 string", what, p.src, t)
				good = false
			} else {
				consumed = consumed.WithTimestampExtractor(&exprExtractor{p: p, headers: p.uses("headers")})
			}
		}
		ok = ok && good
	}
	if wn := f.get("watermark"); wn != nil {
		s, good := c.watermarkField(wn, what+" watermark")
		if good {
			consumed = consumed.WithWatermarkStrategy(s)
		}
		ok = ok && good
	}
	if rn := f.get("offset-reset"); rn != nil {
		r, good := c.oneOf(rn, what+" offset-reset", "earliest", "latest", "none")
		if good {
			consumed = consumed.WithOffsetReset(topology.OffsetReset(r))
		}
		ok = ok && good
	}
	if nn := f.get("name"); nn != nil {
		s, good := c.scalar(nn, what+" name")
		consumed = consumed.WithName(s)
		ok = ok && good
	}
	if !ok {
		return nil, false
	}
	if kind == streamSource {
		return &streamFlow[any]{s: dsl.Stream(c.b, consumed, topics...), info: info}, true
	}
	var store storeSpec
	if kind == globalSource {
		store, ok = c.store(f, what)
	} else {
		store, ok = c.tableStore(f, what)
	}
	if !ok {
		return nil, false
	}
	m := materializedAs[any](store).WithKeySerde(info.keySerde).WithValueSerde(info.valueSerde)
	if kind == globalSource {
		if store.supplier != nil {
			c.errf(f.key("store"), "%s: a global table's store is always in memory, restored at every start: it takes no backend", what)
			return nil, false
		}
		return &globalFlow{g: dsl.GlobalTable(c.b, topics[0], consumed, m), info: info}, true
	}
	return &tableFlow[any]{t: dsl.Table(c.b, topics[0], consumed, m), info: info}, true
}

// sourceSerde reads a source's key-serde or value-serde option, else def.
// A bad option leaves def with type any, so that the source's other
// fields are still checked.
func (c *compiler) sourceSerde(f fields, k, what string, def *dynSerde) (*dynSerde, types.Type, bool) {
	s, t, ok := c.optSerde(f, k, what, def, serdeType(def))
	if !ok {
		return def, types.Any, false
	}
	return s, t, true
}

func serdeType(s *dynSerde) types.Type {
	if s.goType == nil {
		return types.Any
	}
	return types.TypeOf(reflect.Zero(s.goType).Interface())
}

func timestampType(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.String:
		return true
	}
	return t == reflect.TypeFor[time.Time]()
}

// exprExtractor reads event time with a timestamp expression.
type exprExtractor struct {
	p       *program
	headers bool
}

func (e *exprExtractor) Name() string { return "expression(" + e.p.src + ")" }

func (e *exprExtractor) Extract(rec topology.ConsumedRecord, _ int64) (int64, error) {
	out, err := e.p.run(nil, recordEnv(rec.Key, rec.Value, rec.Timestamp, rec.Headers, e.headers))
	if err != nil {
		return 0, err
	}
	ts, err := timestampOf(out)
	if err != nil {
		return 0, e.p.fail(err)
	}
	return ts, nil
}

func (c *compiler) watermarkField(n *yaml.Node, what string) (watermark.Strategy, bool) {
	f, ok := c.mapping(n, what, "strategy", "max-out-of-orderness", "idleness")
	if !ok {
		return watermark.Strategy{}, false
	}
	strategy := "bounded-out-of-orderness"
	if sn := f.get("strategy"); sn != nil {
		if strategy, ok = c.oneOf(sn, what+" strategy", "bounded-out-of-orderness", "monotonous", "none"); !ok {
			return watermark.Strategy{}, false
		}
	}
	var s watermark.Strategy
	switch strategy {
	case "bounded-out-of-orderness":
		bound := watermark.DefaultOutOfOrderness
		if bn := f.get("max-out-of-orderness"); bn != nil {
			if bound, ok = c.duration(bn, what+" max-out-of-orderness"); !ok {
				return s, false
			}
		}
		s = watermark.ForBoundedOutOfOrderness(bound)
	case "monotonous":
		s = watermark.ForMonotonousTimestamps()
	case "none":
		s = watermark.NoWatermarks()
	}
	if strategy != "bounded-out-of-orderness" && f.has("max-out-of-orderness") {
		c.errf(f.key("max-out-of-orderness"), "%s: max-out-of-orderness applies to the bounded-out-of-orderness strategy only, not %s", what, strategy)
		return s, false
	}
	idle, ok := c.optDuration(f, "idleness", what)
	if !ok {
		return s, false
	}
	if idle > 0 {
		s = s.WithIdleness(idle)
	}
	return s, true
}

func (c *compiler) compilePipelines(n *yaml.Node) {
	f, ok := c.mapping(n, "pipelines")
	if !ok {
		return
	}
	for _, name := range f.order {
		kn, vn := f.keys[name], f.get(name)
		if !validName.MatchString(name) {
			c.errf(kn, "pipelines: name %q must be letters, digits, '_' and '-'", name)
			continue
		}
		what := "pipeline " + name
		pf, ok := c.mapping(vn, what, "from", "steps")
		if !ok {
			continue
		}
		fn := pf.get("from")
		if fn == nil {
			c.errf(kn, "%s: missing field \"from\"", what)
			continue
		}
		from, ok := c.stringList(fn, what+" from")
		if !ok {
			continue
		}
		in, ok := c.inputs(fn, from, what)
		if !ok {
			// Later references to the pipeline would only echo this error.
			c.define(name, kn, poisoned{})
			continue
		}
		out, ok := c.steps(name, pf.get("steps"), in)
		if !ok {
			c.define(name, kn, poisoned{})
			continue
		}
		c.define(name, kn, out)
	}
}

// poisoned stands for a pipeline that failed to compile, so that readers
// of it are skipped without a second error.
type poisoned struct{}

func (poisoned) kind() string    { return "a pipeline with errors" }
func (poisoned) meta() *flowInfo { return &flowInfo{} }

// inputs resolves a pipeline's from: one flow, or several streams merged.
func (c *compiler) inputs(n *yaml.Node, names []string, what string) (flow, bool) {
	flows, ok := c.lookupAll(n, names, what+" from")
	if !ok {
		return nil, false
	}
	for i, f := range flows {
		if _, global := f.(*globalFlow); global {
			c.errf(n, "%s from: %s is a global table, which only join-global and left-join-global read", what, names[i])
			return nil, false
		}
	}
	if len(flows) == 1 {
		return flows[0], true
	}
	return c.mergeAll(n, flows, names, "", what+" from")
}

// mergeAll merges streams of one key type.
func (c *compiler) mergeAll(n *yaml.Node, flows []flow, names []string, nodeName, what string) (flow, bool) {
	first, ok := flows[0].(anyStream)
	if !ok {
		c.errf(n, "%s: %s is %s; only streams merge", what, names[0], flows[0].kind())
		return nil, false
	}
	out := first
	for i, f := range flows[1:] {
		s, ok := f.(anyStream)
		if !ok {
			c.errf(n, "%s: %s is %s; only streams merge", what, names[i+1], f.kind())
			return nil, false
		}
		name := nodeName
		if name == "" || i < len(flows)-2 {
			name = ""
		}
		if out, ok = out.merge(s, name); !ok {
			c.errf(n, "%s: %s has windowed keys and %s does not; map them to one kind of key first", what, names[0], names[i+1])
			return nil, false
		}
	}
	return out, true
}

// Build builds the file's topology with its configuration, running every
// build-time rule.
func (f *File) Build() (*topology.Built, error) {
	b, err := f.Topology.Build(configOf(f))
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", f.Path, err)
	}
	return b, nil
}

func configOf(f *File) config.Config { return config.New(f.Config) }
