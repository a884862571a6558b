// SAML negative suite: every forged, altered or stale response fails closed (400/401, no ticket, no
// session, audited): unsigned and tampered documents, signature wrapping, responses not meant for this
// SP, request or time, DOCTYPE and entity bombs.
// Forged documents are signed with xml-crypto and the test keys in test/fixtures/sso/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deflateRawSync } from 'node:zlib';
import { ATTACKER_CERT, ATTACKER_KEY, IDP_CERT, IDP_KEY, certBody, fillResponse, signElement } from '../helpers/saml-peer.ts';
import { PUBLIC_URL, IDP_ENTITY, setup, person, viaIdp, postAcs, refused, failures, forge } from './sso-saml-setup.ts';

test('negative: unsigned, tampered, comment / PI NameIDs, attacker KeyInfo and weak algorithms fail closed', async (t) => {
  const e = await setup(t);

  await t.test('unsigned response', async () => {
    const f = await forge(e);
    await refused(e, () => postAcs(e, f.unsigned, f.pending.relayState), 401, /unsigned/);
  });

  await t.test('NameID tampered after signing', async () => {
    const f = await forge(e, { user: { nameId: 'someone@corp.example.test', email: 'someone@corp.example.test', name: 'Someone' } });
    const tampered = f.signed.replace('>someone@corp.example.test</saml:NameID>', '>admin@corp.example.test</saml:NameID>');
    assert.notEqual(tampered, f.signed);
    await refused(e, () => postAcs(e, tampered, f.pending.relayState), 401, /signature is not valid/);
  });

  await t.test('NameID with an XML comment (admin@x.com<!---->.evil.com, signed as admin@x.com.evil.com)', async () => {
    const f = await forge(e, { user: { nameId: 'admin@x.com.evil.com', email: 'admin@x.com.evil.com', name: 'Evil' } });
    const commented = f.signed.replace('>admin@x.com.evil.com</saml:NameID>', '>admin@x.com<!---->.evil.com</saml:NameID>');
    assert.notEqual(commented, f.signed);
    await refused(e, () => postAcs(e, commented, f.pending.relayState), 401, /comments and processing instructions/);
    assert.equal(await e.s.db.get('SELECT 1 AS x FROM sso_identities WHERE subject LIKE ?', 'admin@x.com%'), undefined);
  });

  await t.test('NameID with a processing instruction', async () => {
    const f = await forge(e, { user: { nameId: 'admin@x.com.evil.com', email: 'admin@x.com.evil.com', name: 'Evil' } });
    const withPi = f.signed.replace('>admin@x.com.evil.com</saml:NameID>', '>admin@x.com<?evil x?>.evil.com</saml:NameID>');
    await refused(e, () => postAcs(e, withPi, f.pending.relayState), 401, /comments and processing instructions/);
  });

  await t.test('signed by an attacker carrying its own certificate in KeyInfo', async () => {
    const f = await forge(e);
    const attackerSigned = signElement(f.unsigned, 'Assertion', ATTACKER_KEY, ATTACKER_CERT);
    assert.ok(attackerSigned.includes(certBody(ATTACKER_CERT)), 'KeyInfo carries the attacker certificate');
    await refused(e, () => postAcs(e, attackerSigned, f.pending.relayState), 401, /signature is not valid/);
    // Signed as a whole by the attacker: the same.
    const g = await forge(e);
    await refused(e, () => postAcs(e, signElement(g.unsigned, 'Response', ATTACKER_KEY, ATTACKER_CERT), g.pending.relayState), 401, /signature is not valid/);
  });

  await t.test('RSA-SHA1 signature and SHA-1 digest are not allowed', async () => {
    const f = await forge(e);
    const sha1 = signElement(f.unsigned, 'Assertion', IDP_KEY, IDP_CERT, {
      signatureAlgorithm: 'http://www.w3.org/2000/09/xmldsig#rsa-sha1', digestAlgorithm: 'http://www.w3.org/2000/09/xmldsig#sha1',
    });
    await refused(e, () => postAcs(e, sha1, f.pending.relayState), 401, /algorithm not allowed/);
  });
});

test('negative: signature wrapping fails closed (forged assertion beside, signed one wrapped, duplicate IDs)', async (t) => {
  const e = await setup(t);
  const assertionOf = (xml: string) => /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(xml)![0];

  await t.test('a forged unsigned assertion beside the signed one', async () => {
    const f = await forge(e);
    const evil = { nameId: 'admin@corp.example.test', email: 'admin@corp.example.test', name: 'Admin' };
    const forged = assertionOf(fillResponse({ ...f.values, AssertionID: '_forged' }, evil));
    for (const doc of [
      f.signed.replace('<saml:Assertion ', `${forged}<saml:Assertion `),
      f.signed.replace('</samlp:Response>', `${forged}</samlp:Response>`),
    ]) {
      await refused(e, () => postAcs(e, doc, f.pending.relayState), 401, /exactly one assertion/);
    }
  });

  await t.test('the signed assertion wrapped inside another element, a forged one in its place', async () => {
    const f = await forge(e);
    const signedAssertion = assertionOf(f.signed);
    const evil = { nameId: 'admin@corp.example.test', email: 'admin@corp.example.test', name: 'Admin' };
    const forged = assertionOf(fillResponse({ ...f.values, AssertionID: '_forged' }, evil));
    const wrappedInExtensions = f.signed.replace(signedAssertion, `<samlp:Extensions>${signedAssertion}</samlp:Extensions>${forged}`);
    await refused(e, () => postAcs(e, wrappedInExtensions, f.pending.relayState), 401, /exactly one assertion/);
    // Wrapped alone (no forged sibling): an assertion not directly under the Response is refused.
    const wrappedOnly = f.signed.replace(signedAssertion, `<samlp:Extensions>${signedAssertion}</samlp:Extensions>`);
    await refused(e, () => postAcs(e, wrappedOnly, f.pending.relayState), 401, /assertion directly under the Response is missing/);
    // Inside the forged assertion (e.g. in its SubjectConfirmationData).
    const inside = f.signed.replace(signedAssertion, forged.replace('</saml:Subject>', `<saml:SubjectConfirmation Method="urn:x">${signedAssertion}</saml:SubjectConfirmation></saml:Subject>`));
    await refused(e, () => postAcs(e, inside, f.pending.relayState), 401, /exactly one assertion/);
  });

  await t.test('duplicate IDs (another element carrying the signed assertion\'s ID)', async () => {
    const f = await forge(e);
    const id = f.values.AssertionID!;
    const dup = f.signed.replace('<samlp:Status>', `<samlp:Extensions><x:Decoy xmlns:x="urn:decoy" ID="${id}"/></samlp:Extensions><samlp:Status>`);
    await refused(e, () => postAcs(e, dup, f.pending.relayState), 401, /duplicate ID/);
    // The forged assertion takes the signed one's ID and the signed one hides elsewhere.
    const g = await forge(e);
    const evil = { nameId: 'admin@corp.example.test', email: 'admin@corp.example.test', name: 'Admin' };
    const forged = assertionOf(fillResponse({ ...g.values }, evil));
    const swapped = g.signed.replace(assertionOf(g.signed), `${forged}<samlp:Extensions>${assertionOf(g.signed)}</samlp:Extensions>`);
    await refused(e, () => postAcs(e, swapped, g.pending.relayState), 401, /duplicate ID|exactly one assertion/);
  });
});

test('negative: responses the samlify IdP signs but that are not for this SP, this request or this time fail closed', async (t) => {
  const e = await setup(t);
  const minutes = (m: number) => new Date(Date.now() + m * 60_000).toISOString();
  const cases: Array<[string, (v: Record<string, string | null>) => Record<string, string | null>, RegExp]> = [
    ['wrong audience', (v) => ({ ...v, Audience: 'https://other-sp.example.test' }), /the assertion is for another audience/],
    ['wrong recipient', (v) => ({ ...v, SubjectRecipient: 'http://evil.test/acs' }), /the Recipient is not this assertion consumer/],
    ['wrong destination', (v) => ({ ...v, Destination: 'http://evil.test/acs' }), /the response Destination is not this assertion consumer/],
    ['expired', (v) => ({ ...v, ConditionsNotBefore: minutes(-20), ConditionsNotOnOrAfter: minutes(-10), SubjectConfirmationDataNotOnOrAfter: minutes(-10) }), /the assertion has expired/],
    ['expired beyond the 60 s skew', (v) => ({ ...v, ConditionsNotOnOrAfter: new Date(Date.now() - 61_000).toISOString() }), /the assertion has expired/],
    // Conditions valid; only the bearer confirmation is past (or has no end at all).
    ['subject confirmation expired', (v) => ({ ...v, SubjectConfirmationDataNotOnOrAfter: minutes(-10) }), /the subject confirmation has expired/],
    ['subject confirmation without NotOnOrAfter', (v) => ({ ...v, SubjectConfirmationDataNotOnOrAfter: null }), /the subject confirmation has no NotOnOrAfter/],
    ['not yet valid', (v) => ({ ...v, ConditionsNotBefore: minutes(5), ConditionsNotOnOrAfter: minutes(10) }), /the assertion is not yet valid/],
    ['unknown InResponseTo', (v) => ({ ...v, InResponseTo: '_0123456789abcdef0123456789abcdef01234567' }), /InResponseTo matches no pending/],
    ['non-success status', (v) => ({ ...v, StatusCode: 'urn:oasis:names:tc:SAML:2.0:status:Responder' }), /status:Responder/],
    // Only the signed assertion's Issuer differs (the Response's is right), then only the Response's.
    ['another issuer of the assertion', (v) => ({ ...v, AssertionIssuer: 'https://other-idp.example.test' }), /the assertion Issuer is not the configured IdP/],
    ['another issuer of the response', (v) => ({ ...v, Issuer: 'https://other-idp.example.test', AssertionIssuer: IDP_ENTITY }), /the response Issuer is not the configured IdP/],
    ['no AuthnStatement', (v) => ({ ...v, AuthnStatement: null }), /the assertion has no AuthnStatement/],
  ];
  for (const [name, tweak, reason] of cases) {
    await t.test(name, async () => {
      e.peer.tweak = tweak;
      try {
        await refused(e, async () => (await viaIdp(e, person())).acs, 401, reason);
      } finally {
        e.peer.tweak = (v) => v;
      }
    });
  }

  await t.test('within the 60 s skew is accepted', async () => {
    e.peer.tweak = (v) => ({ ...v, ConditionsNotBefore: new Date(Date.now() + 30_000).toISOString() });
    try {
      const { acs } = await viaIdp(e, person());
      assert.equal(acs.status, 302, acs.text);
    } finally {
      e.peer.tweak = (v) => v;
    }
  });

  await t.test('replayed InResponseTo (the same valid response posted twice)', async () => {
    const { form, acs } = await viaIdp(e, person());
    assert.equal(acs.status, 302, acs.text);
    await refused(e, () => e.browser.go('POST', form.action, { form: form.fields }), 401, /InResponseTo/);
  });

  await t.test('a genuine response posted to an unknown provider id', async () => {
    const f = await forge(e);
    const r = await e.browser.go('POST', `${PUBLIC_URL}/api/auth/sso/saml/idp_unknown/acs`, {
      form: { SAMLResponse: Buffer.from(f.signed).toString('base64'), RelayState: f.pending.relayState },
    });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'sso_provider_unknown');
    assert.equal((await failures(e)).at(-1)!.metadata.code, 'sso_provider_unknown');
  });
});

test('negative: DOCTYPE and entity bombs are refused quickly, before parsing; malformed input is 400', async (t) => {
  const e = await setup(t);
  const f = await forge(e);
  const laughs = '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i === 0 ? '' : i};`.repeat(10)}">`).join('')
    + ']>';
  const bomb = `${laughs}${f.signed.replace('>' + f.user.nameId + '<', '>&lol9;<')}`;
  const t0 = performance.now();
  const r = await refused(e, () => postAcs(e, bomb, f.pending.relayState), 400, /DOCTYPE/);
  assert.ok(performance.now() - t0 < 1000, 'refused in under a second');
  assert.equal(r.body.error.code, 'saml_response_invalid');

  const xxe = `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>${f.signed.replace('>' + f.user.nameId + '<', '>&x;<')}`;
  await refused(e, () => postAcs(e, xxe, f.pending.relayState), 400, /DOCTYPE/);
  await refused(e, () => postAcs(e, 'not base64 at all!', f.pending.relayState, true), 400, /base64/);
  await refused(e, () => postAcs(e, '<samlp:Response', f.pending.relayState), 400, /well-formed/);
  await refused(e, () => postAcs(e, deflateRawSync('x').toString('base64'), f.pending.relayState, true), 400, /UTF-8/);
  // The pending request was never consumed by the refusals: the genuine response still signs in.
  const ok = await postAcs(e, f.signed, f.pending.relayState);
  assert.equal(ok.status, 302, ok.text);
  const form = await e.browser.go('POST', e.acsUrl, { json: { SAMLResponse: 'x' } });
  assert.equal(form.status, 415);
});
