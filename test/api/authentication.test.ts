import { base64url, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { accountHeaders, appOne, appTwo, call, expectErrorShape, mintToken, uniqueUser } from './support/client.ts';

/** Account service authentication (spec, Authentication): Bearer JWT of the app's IdP + app secret. */
async function postAccount(headers: Record<string, string>) {
  return call('account', 'POST', '/account', { headers });
}

async function expectNoAccount(sub: string) {
  const response = await call('account', 'GET', '/account', { headers: await accountHeaders(appOne, sub) });
  expect(response.status).toBe(404);
}

describe('account service authentication', () => {
  it('401 without the secret key header, and stores nothing', async () => {
    const sub = uniqueUser('nosecret');
    const response = await postAccount({ authorization: `Bearer ${await mintToken(appOne, sub)}` });
    expect(response.status).toBe(401);
    expect(expectErrorShape(response.body).code).toBe('MISSING_SECRET_KEY');
    await expectNoAccount(sub);
  });

  it('401 with an unknown secret key', async () => {
    const sub = uniqueUser('badsecret');
    const response = await postAccount({ authorization: `Bearer ${await mintToken(appOne, sub)}`, 'x-service-secret-key': 'sk_not_a_real_key_0000' });
    expect(response.status).toBe(401);
    expect(expectErrorShape(response.body).code).toBe('INVALID_SECRET_KEY');
    await expectNoAccount(sub);
  });

  it('401 without a bearer token', async () => {
    const response = await postAccount({ 'x-service-secret-key': appOne.secret_key });
    expect(response.status).toBe(401);
    expect(expectErrorShape(response.body).code).toBe('MISSING_TOKEN');
  });

  it("refuses a token of one app presented with another app's secret", async () => {
    const sub = uniqueUser('crossapp');
    const response = await postAccount({ authorization: `Bearer ${await mintToken(appTwo, sub)}`, 'x-service-secret-key': appOne.secret_key });
    expect(response.status).toBe(401);
    expect(expectErrorShape(response.body).code).toBe('INVALID_TOKEN');
    await expectNoAccount(sub);
  });

  it('refuses expired, not-yet-valid, wrong-issuer and wrong-audience tokens', async () => {
    const sub = uniqueUser('claims');
    const now = Math.floor(Date.now() / 1000);
    const tokens = [
      await mintToken(appOne, sub, { iat: now - 7200, ttlSeconds: 60 }),
      await mintToken(appOne, sub, { claims: { nbf: now + 3600 } }),
      await mintToken(appOne, sub, { issuer: 'https://evil.example' }),
      await mintToken(appOne, sub, { audience: 'someone-else' }),
      await mintToken(appOne, sub, { audience: null }),
    ];
    for (const token of tokens) {
      const response = await postAccount({ authorization: `Bearer ${token}`, 'x-service-secret-key': appOne.secret_key });
      expect(response.status).toBe(401);
      expect(expectErrorShape(response.body).code).toBe('INVALID_TOKEN');
    }
    await expectNoAccount(sub);
  });

  it('refuses an absurd exp (1e308, 11 years ahead) with 401 INVALID_TOKEN; a year-long token too, by the 24-hour default maximum age', async () => {
    const sub = uniqueUser('absurd-exp');
    for (const ttlSeconds of [1e308, 11 * 365 * 86400]) {
      const response = await postAccount({
        authorization: `Bearer ${await mintToken(appOne, sub, { ttlSeconds })}`,
        'x-service-secret-key': appOne.secret_key,
      });
      expect(response.status).toBe(401);
      expect(expectErrorShape(response.body)).toMatchObject({ code: 'INVALID_TOKEN', message: expect.stringMatching(/"exp" claim is more than/) });
    }
    const yearLong = await postAccount({
      authorization: `Bearer ${await mintToken(appOne, sub, { ttlSeconds: 365 * 86400 })}`,
      'x-service-secret-key': appOne.secret_key,
    });
    expect(yearLong.status).toBe(401);
    expect(expectErrorShape(yearLong.body)).toMatchObject({ code: 'INVALID_TOKEN', message: expect.stringContaining('maximum token age (86400 seconds)') });
    await expectNoAccount(sub);
    const day = await postAccount({
      authorization: `Bearer ${await mintToken(appOne, sub, { ttlSeconds: 86400 })}`,
      'x-service-secret-key': appOne.secret_key,
    });
    expect(day.status).toBe(200);
  });

  it('refuses unsigned (alg none) and HMAC-signed tokens', async () => {
    const sub = uniqueUser('alg');
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: appOne.issuer, aud: appOne.audience, sub, iat: now, exp: now + 300 };
    const unsigned = `${base64url.encode(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${base64url.encode(JSON.stringify(claims))}.`;
    const hmac = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', kid: appOne.privateJwk.kid! })
      .sign(new TextEncoder().encode('a-shared-secret-anyone-could-guess'));
    for (const token of [unsigned, hmac]) {
      const response = await postAccount({ authorization: `Bearer ${token}`, 'x-service-secret-key': appOne.secret_key });
      expect(response.status).toBe(401);
    }
    await expectNoAccount(sub);
  });
});
