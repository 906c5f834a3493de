// A real OpenID provider for trying single sign-on locally and for the SSO tests: the
// certified `oidc-provider` package (installed by scripts/oidc-provider.sh) with one
// confidential client, a few people and its own signing key (a fresh RSA key per start,
// published at its jwks_uri). Its login form is the package's development form: type a
// login below (any password); consent is granted for the one client.
//
//   node scripts/oidc_provider.mjs            (settings from the environment, defaults below)
//   OIDC_PORT=9400 OIDC_REDIRECT_URI=http://127.0.0.1:8000/dashboard/sso/callback ...
//
// OIDC_PORT (9400), OIDC_ISSUER (http://127.0.0.1:$OIDC_PORT), OIDC_CLIENT_ID (docpub),
// OIDC_CLIENT_SECRET (docpub-local-sso-secret), OIDC_REDIRECT_URI (Docpub's callback),
// OIDC_USERS: JSON {"login": {"email": ..., "email_verified": true|false, "name": ...}},
// OIDC_MODULES: the node_modules folder holding oidc-provider (default .oidc-provider/node_modules).
// Prints "ready <issuer>" on stdout once listening (loopback only).
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const env = process.env;
const port = Number(env.OIDC_PORT || 9400);
const issuer = env.OIDC_ISSUER || `http://127.0.0.1:${port}`;
const clientId = env.OIDC_CLIENT_ID || 'docpub';
const clientSecret = env.OIDC_CLIENT_SECRET || 'docpub-local-sso-secret';
const redirectUri = env.OIDC_REDIRECT_URI || 'http://127.0.0.1:8000/dashboard/sso/callback';
const users = JSON.parse(env.OIDC_USERS || JSON.stringify({
  ada: { email: 'ada@example.com', email_verified: true, name: 'Ada' },
  bob: { email: 'bob@example.com', email_verified: true, name: 'Bob' },
  eve: { email: 'eve@example.com', email_verified: false, name: 'Eve' },
  cy: { email: 'cy@example.org', email_verified: true, name: 'Cy' },
}));
const modules = path.resolve(env.OIDC_MODULES || path.join(process.cwd(), '.oidc-provider', 'node_modules'));
const require = createRequire(path.join(modules, 'noop.js'));
const { default: Provider } = await import(pathToFileURL(require.resolve('oidc-provider')).href);

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), use: 'sig', alg: 'RS256' };

const provider = new Provider(issuer, {
  clients: [{
    client_id: clientId, client_secret: clientSecret, redirect_uris: [redirectUri],
    grant_types: ['authorization_code'], response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  jwks: { keys: [signingKey] },
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  // The email claims go into the ID token itself (the relying party reads them there).
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  cookies: { keys: [randomUUID()] },
  async findAccount(ctx, id) {
    const person = users[id];
    if (!person) return undefined;
    return { accountId: id, async claims() { return { sub: id, ...person }; } };
  },
  // The one client is first-party: no consent screen.
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid email profile');
    await grant.save();
    return grant;
  },
});
provider.listen(port, '127.0.0.1', () => { process.stdout.write(`ready ${issuer}\n`); });
