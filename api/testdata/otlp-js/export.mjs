// Sends two spans of one run to svc's OTLP door with the official
// OpenTelemetry JavaScript SDK and one of its OTLP/HTTP trace exporters:
// SVC_OTLP_PROTOCOL=json uses @opentelemetry/exporter-trace-otlp-http,
// proto uses @opentelemetry/exporter-trace-otlp-proto. api/traces_node_test.go
// runs it against a real server and reads what the door stored.
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';

const { SVC_OTLP_URL: base, SVC_OTLP_KEY: key, SVC_RUN_ID: runId, SVC_OTLP_PROTOCOL: protocol } = process.env;
const { OTLPTraceExporter } = protocol === 'proto'
  ? await import('@opentelemetry/exporter-trace-otlp-proto')
  : await import('@opentelemetry/exporter-trace-otlp-http');

const exporter = new OTLPTraceExporter({ url: `${base}/v1/traces`, headers: { Authorization: `Bearer ${key}` } });
let failed = null;
const export_ = exporter.export.bind(exporter);
exporter.export = (spans, done) => export_(spans, (result) => {
  if (result.code !== 0) failed = result.error ?? new Error(`export result ${result.code}`);
  done(result);
});
const provider = new BasicTracerProvider({
  resource: resourceFromAttributes({ 'svc.run_id': runId }),
  spanProcessors: [new SimpleSpanProcessor(exporter)],
});
const tracer = provider.getTracer('js-agent');

const chat = tracer.startSpan('chat claude', { attributes: {
  'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'claude-x',
  'gen_ai.usage.input_tokens': 21, 'gen_ai.usage.output_tokens': 4,
} });
chat.end();
const tool = tracer.startSpan('execute_tool fetch', { attributes: {
  'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'fetch',
} });
tool.end();
await provider.forceFlush();
await provider.shutdown();
if (failed) {
  console.error(`export failed: ${failed.message ?? failed}`);
  process.exit(1);
}
console.log('ok');
