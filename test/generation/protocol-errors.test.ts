// How connector calls fail (src/generation/connectors/protocols/errors.ts, credential.ts): statuses,
// network errors and egress refusals as ConnectorError, with the credential scrubbed everywhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConnectorError } from '../../src/generation/connectors/protocols/types.ts';
import { EgressRefused } from '../../src/kernel/egress.ts';
import { messageOfBody, statusError, toConnectorError } from '../../src/generation/connectors/protocols/errors.ts';
import { redact } from '../../src/generation/connectors/protocols/credential.ts';

test('the message of an error body: error.message, message, error, detail, else the text', () => {
  assert.equal(messageOfBody('{"error":{"message":"bad model"}}'), 'bad model');
  assert.equal(messageOfBody('{"message":"m","error":"e"}'), 'm');
  assert.equal(messageOfBody('{"error":"e","detail":"d"}'), 'e');
  assert.equal(messageOfBody('{"detail":"d"}'), 'd');
  assert.equal(messageOfBody('  <html>\n  gateway   down </html> '), '<html> gateway down </html>');
  assert.equal(messageOfBody('{not json'), '{not json');
  assert.equal(messageOfBody('x'.repeat(300)).length, 200);
});

test('statuses: 5xx, 408 and 429 retryable; other codes rejected; the secret scrubbed', () => {
  for (const status of [500, 503, 408, 429]) {
    const e = statusError(status, 'POST', '/v1/x', '{"error":"busy sk-1"}', 'sk-1');
    assert.equal(e.code, 'connector_http_error');
    assert.equal(e.retryable, true);
    assert.equal(e.message, `HTTP ${status} from POST /v1/x: busy [redacted]`);
  }
  for (const status of [400, 401, 404, 302]) {
    const e = statusError(status, 'GET', '/m', '', null);
    assert.equal(e.code, 'connector_rejected');
    assert.equal(e.retryable, false);
    assert.equal(e.message, `HTTP ${status} from GET /m`);
  }
});

test('network errors, aborts, refusals and bad headers as ConnectorError', () => {
  const known = new ConnectorError('connector_timeout', 'x', true);
  assert.equal(toConnectorError(known, null, 'w'), known);
  const refused = toConnectorError(new EgressRefused('169.254.169.254 is a link-local address', '169.254.169.254'), null, 'w');
  assert.equal(refused.code, 'egress_refused');
  assert.equal(refused.retryable, false);
  const reset = toConnectorError(Object.assign(new Error('socket hang up sk-2'), { code: 'ECONNRESET' }), 'sk-2', 'POST /v1');
  assert.deepEqual([reset.code, reset.retryable, reset.message], ['connector_unreachable', true, 'POST /v1: ECONNRESET socket hang up [redacted]']);
  assert.equal(toConnectorError(Object.assign(new Error('x'), { name: 'AbortError' }), null, 'w').code, 'connector_aborted');
  const header = toConnectorError(Object.assign(new Error('bad'), { code: 'ERR_INVALID_CHAR' }), null, 'GET /');
  assert.deepEqual([header.code, header.retryable, header.message], ['connector_bad_request', false, 'GET /: invalid header value']);
  assert.equal(toConnectorError('odd', null, 'w').code, 'connector_unreachable');
  assert.equal(redact('token sk-3 and sk-3', 'sk-3'), 'token [redacted] and [redacted]');
  assert.equal(redact('text', null), 'text');
});
