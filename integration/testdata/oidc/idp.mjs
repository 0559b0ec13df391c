// Configures and runs the npm oidc-provider library (installed by
// scripts/oidc-provider.sh; its directory in OIDC_PROVIDER_DIR) as the
// identity provider of the identity tests, on 127.0.0.1:PORT. Only the
// configuration is ours: three users in two groups, one confidential
// client (code with PKCE, refresh, device flow), the library's own
// development login and consent pages. ID_TOKEN_TTL and
// ACCESS_TOKEN_TTL (seconds) shorten tokens for expiry tests;
// DEVICE_GRANT=0 registers the client without the device grant (the
// provider keeps the flow, and refuses it to this client with
// unauthorized_client, as Okta and Entra ID do by default); it prints
// "ready <issuer>" when it listens.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const dir = process.env.OIDC_PROVIDER_DIR;
const { default: Provider } = await import(pathToFileURL(path.join(dir, 'node_modules/oidc-provider/lib/index.js')).href);

const port = Number(process.env.PORT);
const issuer = `http://127.0.0.1:${port}`;
const users = {
  alice: { email: 'alice@example.com', groups: ['gateway-admins', 'engineering'] },
  bob: { email: 'bob@example.com', groups: ['engineering'] },
  carol: { email: 'carol@example.com', groups: ['auditors'] },
  // Two people the provider gave one address, as when an email passes
  // from someone who left to someone new: their subjects differ.
  pat1: { email: 'pat@example.com', groups: ['engineering'] },
  pat2: { email: 'pat@example.com', groups: ['engineering'] },
};

const provider = new Provider(issuer, {
  clients: [{
    client_id: 'modelgate',
    client_secret: 'modelgate-test-secret',
    redirect_uris: (process.env.REDIRECT_URIS || '').split(',').filter(Boolean),
    grant_types: ['authorization_code', 'refresh_token',
      ...(process.env.DEVICE_GRANT === '0' ? [] : ['urn:ietf:params:oauth:grant-type:device_code'])],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
  scopes: ['openid', 'offline_access', 'email', 'profile', 'groups'],
  // The groups go in the ID token itself, as Okta's and Entra ID's
  // groups claims do.
  conformIdTokenClaims: false,
  features: { devInteractions: { enabled: true }, deviceFlow: { enabled: true }, revocation: { enabled: true } },
  pkce: { required: () => true },
  issueRefreshToken: async () => true,
  ttl: {
    IdToken: Number(process.env.ID_TOKEN_TTL || 3600),
    AccessToken: Number(process.env.ACCESS_TOKEN_TTL || 3600),
    RefreshToken: 86400,
    DeviceCode: 600,
    Grant: 86400,
    Interaction: 600,
    Session: 86400,
  },
  cookies: { keys: ['modelgate-test-cookie-key'] },
  async findAccount(ctx, id) {
    const u = users[id];
    if (!u) return undefined;
    return {
      accountId: id,
      async claims() {
        return { sub: id, email: u.email, email_verified: true, name: id, groups: u.groups };
      },
    };
  },
});
provider.proxy = false;
provider.listen(port, '127.0.0.1', () => { console.log(`ready ${issuer}`); });
