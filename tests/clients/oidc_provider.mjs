// A real OpenID provider for Atrium's sign-in tests: panva's oidc-provider (OpenID Certified),
// with its development login form (any login, any password), two clients and JWT access tokens.
//
// Usage: node oidc_provider.mjs PORT CONFIG_JSON
// CONFIG_JSON: {"redirectUri": "...", "postLogoutUri": "...", "secret": "...",
//               "machineSecret": "...", "audience": "urn:atrium:api", "group": "payments-squad"}
// Prints one line `{"ready": ISSUER}` once it listens. POST /__configure with some of the same
// keys changes them (an Atrium started after the provider names its own URIs).
//
// Clients: "atrium" (authorization code, client_secret_basic, the redirect and post-logout URIs
// given) and "ci-bot" (client credentials; its access tokens carry `atrium_group`).
// Accounts: every login is an account; its claims are preferred_username = the login,
// email = <login>@junipermarket.example (or the login itself when it has an @), name and picture.
//
// POST /__sign {"claims": {...}, "header": {...}} signs whatever the test asks with the current
// key: tokens that are the provider's own in every way but the one a test breaks (expired,
// another audience or issuer).
// POST /__rotate swaps in a new signing key (the old one is still published, second): what a
// provider rotating its keys does. Tokens issued before stay verifiable; new ones name the new
// kid. The memory adapter's store is shared by every Provider in the process, so sessions,
// codes and grants survive the swap.
import { generateKeyPairSync, randomUUID } from "node:crypto";
import http from "node:http";

import { SignJWT, importJWK } from "jose";
import Provider from "oidc-provider";

const [port, rawConfig] = process.argv.slice(2);
let config = JSON.parse(rawConfig);
const issuer = `http://127.0.0.1:${port}`;

function signingKey() {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return { ...privateKey.export({ format: "jwk" }), kid: randomUUID(), use: "sig", alg: "RS256" };
}

function titleCase(login) {
  return login
    .split("@")[0]
    .split(/[._-]/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join(" ");
}

// A picture as providers give them: a URL of an image (here a data: URL, so that a browser
// shows it without a network).
function pictureOf(login) {
  const hue = [...login].reduce((sum, c) => sum + c.charCodeAt(0), 0) % 360;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 40 40"><rect width="40" height="40" fill="hsl(${hue} 55% 45%)"/><circle cx="20" cy="16" r="7" fill="#fff"/><path d="M7 38c2-9 7-12 13-12s11 3 13 12z" fill="#fff"/></svg>`;
  return `data:image/svg+xml,${encodeURIComponent(svg)}`;
}

function claimsOf(login) {
  const email = login.includes("@") ? login : `${login}@junipermarket.example`;
  return {
    sub: login,
    preferred_username: login,
    email,
    email_verified: true,
    name: titleCase(login),
    picture: pictureOf(login),
  };
}

function build(keys) {
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: "atrium",
        client_secret: config.secret,
        redirect_uris: [config.redirectUri],
        post_logout_redirect_uris: [config.postLogoutUri],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
      },
      {
        client_id: "ci-bot",
        client_secret: config.machineSecret,
        redirect_uris: [],
        response_types: [],
        grant_types: ["client_credentials"],
      },
    ],
    jwks: { keys },
    cookies: { keys: ["the sign-in tests' provider cookie key"] },
    claims: {
      openid: ["sub"],
      profile: ["name", "preferred_username", "picture"],
      email: ["email", "email_verified"],
    },
    async findAccount(_ctx, id) {
      return { accountId: id, claims: async () => claimsOf(id) };
    },
    // A first-party client: no consent page after the login form.
    async loadExistingGrant(ctx) {
      const clientId = ctx.oidc.client.clientId;
      const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({ clientId, accountId: ctx.oidc.session.accountId });
      grant.addOIDCScope("openid profile email");
      await grant.save();
      return grant;
    },
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      rpInitiatedLogout: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // Client credentials without a resource parameter are for Atrium's API.
        defaultResource: async (ctx, client, oneOf) =>
          oneOf ?? (client.clientId === "ci-bot" ? config.audience : undefined),
        useGrantedResource: async () => false,
        getResourceServerInfo: async () => ({
          scope: "read write",
          audience: config.audience,
          accessTokenFormat: "jwt",
          accessTokenTTL: 600,
          jwt: { sign: { alg: "RS256" } },
        }),
      },
    },
    async extraTokenClaims(_ctx, token) {
      return token.clientId === "ci-bot" ? { atrium_group: config.group } : undefined;
    },
  });
  provider.on("server_error", (_ctx, error) => console.error("server_error", error));
  return provider;
}

let keys = [signingKey()];
let handler = build(keys).callback();

async function body(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString() || "{}");
}

const server = http.createServer(async (req, res) => {
  if (req.method === "POST" && req.url === "/__configure") {
    config = { ...config, ...(await body(req)) };
    handler = build(keys).callback();
    res.writeHead(204);
    res.end();
    return;
  }
  if (req.method === "POST" && req.url === "/__sign") {
    const { claims, header = {} } = await body(req);
    const key = await importJWK(keys[0], "RS256");
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: "RS256", kid: keys[0].kid, ...header })
      .sign(key);
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ token }));
    return;
  }
  if (req.method === "POST" && req.url === "/__rotate") {
    keys = [signingKey(), keys[0]];
    handler = build(keys).callback();
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ kid: keys[0].kid }));
    return;
  }
  handler(req, res);
});

server.listen(Number(port), "127.0.0.1", () => {
  console.log(JSON.stringify({ ready: issuer }));
});

for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
