import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { importJWK, type JWK, SignJWT } from 'jose';
import { devAppPaths, loadOrCreateDevApp } from './applications.ts';

/** `npm run token -- --sub alice [--ttl 300]`: a JWT from the local dev app's identity provider. */
const { values } = parseArgs({
  options: { sub: { type: 'string' }, ttl: { type: 'string', default: '3600' }, 'data-dir': { type: 'string' } },
});
const ttl = Number(values.ttl);
if (!values.sub || !Number.isInteger(ttl) || ttl <= 0) {
  process.stderr.write('usage: npm run token -- --sub <user id> [--ttl <seconds>] [--data-dir <dir>]\n');
  process.exit(2);
}
const dataDir = values['data-dir'] ?? process.env.DATA_DIR ?? '.data';
const app = await loadOrCreateDevApp(dataDir);
const jwk = JSON.parse(await readFile(devAppPaths(dataDir).issuerKey, 'utf8')) as JWK;
const token = await new SignJWT({})
  .setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: jwk.kid! })
  .setIssuer(app.oidc.issuer)
  .setAudience(app.oidc.audience!)
  .setSubject(values.sub)
  .setIssuedAt()
  .setExpirationTime(`${ttl}s`)
  .sign(await importJWK(jwk, 'ES256'));
process.stdout.write(`${token}\n`);
