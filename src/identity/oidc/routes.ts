// The OpenID provider's redirect back: GET /api/auth/sso/callback (public; the one-time state is the
// credential, and the flow cookie binds it to the browser that started the sign-in).
import type { Router } from '../../http/router.ts';
import { completeOidc } from './flow.ts';

export function bindOidcRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  r.get('/api/auth/sso/callback', {
    summary: 'OIDC redirect URI: checks the one-time state and the flow cookie svc_sso_flow of the browser that started the sign-in (missing or different: 401 sso_browser_mismatch), exchanges the code (PKCE), verifies the ID token (JWKS, algorithm allow-list, iss, aud, exp, nonce, azp), '
      + 'maps the claims and redirects (302) to `{SVC_FRONTEND_ORIGIN}/sso/complete#ticket=...` (a one-time ticket for POST /api/auth/sso/redeem; never a session token). '
      + 'Refusals are 400/401 and audited as auth.sso.failed.',
    tags: ['auth', 'sso'], auth: 'none',
    response: { status: 302, description: 'redirect to the front end with a one-time ticket in the fragment' },
  }, async ({ req, ctx, searchParams }) => {
    const one = (k: string) => searchParams.get(k);
    const location = await completeOidc(ctx, req, { state: one('state'), code: one('code'), error: one('error'), iss: one('iss') });
    return { status: 302, headers: { location, 'referrer-policy': 'no-referrer' } };
  });
}
