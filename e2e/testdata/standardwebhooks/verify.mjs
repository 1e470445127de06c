// Verifies one captured webhook delivery with the reference Standard
// Webhooks library: SVC_WH_SECRET (whsec_...), SVC_WH_HEADERS (a JSON object
// of the request's headers) and SVC_WH_BODY (the raw body). Prints the
// verified payload as JSON; exits 1 (with the library's error) when the
// signature does not verify.
import { Webhook } from "standardwebhooks";

const wh = new Webhook(process.env.SVC_WH_SECRET.replace(/^whsec_/, ""));
try {
  const payload = wh.verify(process.env.SVC_WH_BODY, JSON.parse(process.env.SVC_WH_HEADERS));
  process.stdout.write(JSON.stringify(payload));
} catch (e) {
  process.stderr.write(`standardwebhooks: ${e.message}\n`);
  process.exit(1);
}
