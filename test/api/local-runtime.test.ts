import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { startRuntimeProcess, stopProcess } from './support/global-setup.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

/**
 * `npm start` without APPS_FILE: a dev app is generated once into DATA_DIR, `npm run token`
 * mints JWTs for it, and a restart keeps accounts and wallets. Runs once (embedded engine).
 */
describe.runIf(process.env.TEST_DYNAMODB === 'dynalite')('local runtime with the dev app', () => {
  let dataDir = '';
  afterAll(async () => {
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('serves the dev app, keeps data across a restart, retires apps no longer configured, and logs no secrets', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'sandbox-restart-'));
    const first = await startRuntimeProcess({ DATA_DIR: dataDir, APPS_FILE: '' });
    const devApp = JSON.parse(await readFile(join(dataDir, 'dev-app.json'), 'utf8'));
    const { stdout: token } = await run(
      process.execPath,
      ['infra/local/token.ts', '--sub', 'alice', '--ttl', '300', '--data-dir', dataDir, '--account-url', first.urls.account],
      { cwd: ROOT },
    );
    const headers = { authorization: `Bearer ${token.trim()}`, 'x-service-secret-key': devApp.secret_key };

    const created = await fetch(`${first.urls.account}/account`, { method: 'POST', headers });
    expect(created.status).toBe(200);
    const account = (await created.json()) as Record<string, unknown>;
    const signed = await fetch(`${first.urls.account}/wallet/sign`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'before restart' }),
    });
    expect(signed.status).toBe(200);
    const address = account.public_address as { ETH: string; SOL: string };
    for (const [chain, to, token] of [
      ['ARB', address.ETH, 'USDC'],
      ['SOL', address.SOL, 'USDC'],
    ]) {
      const credited = await fetch(`${first.urls.account}/sandbox/faucet`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ chain, address: to, token, amount: '42.5' }),
      });
      expect(credited.status).toBe(200);
    }
    await stopProcess(first.child);

    const second = await startRuntimeProcess({ DATA_DIR: dataDir, APPS_FILE: '' });
    try {
      const fetched = await fetch(`${second.urls.account}/account`, { headers });
      expect(fetched.status).toBe(200);
      const { success: _success, ...resource } = account;
      expect(await fetched.json()).toEqual(resource);
      const signedAgain = await fetch(`${second.urls.account}/wallet/sign`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'after restart' }),
      });
      expect(signedAgain.status).toBe(200);
      // One runtime per DATA_DIR: a second one is refused with a clear message.
      await expect(startRuntimeProcess({ DATA_DIR: dataDir, APPS_FILE: '' })).rejects.toThrow(/is in use by another local runtime/);
      // Chain state survives the restart too (anvil state files, the LiteSVM snapshot).
      for (const chain of ['ARB', 'SOL']) {
        const balance = await fetch(`${second.urls.account}/demo/wallet/balance?chain=${chain}`, { headers });
        expect(((await balance.json()) as { assets: Record<string, string> }).assets.USDC).toBe('42.5');
      }
    } finally {
      await stopProcess(second.child);
    }

    // Switching to an APPS_FILE retires the dev app: its secret key stops working.
    const appsFile = join(dataDir, 'apps.json');
    const acme = { ...devApp, app_id: 'acme', secret_key: 'sk_acme_0123456789abcdef', api_key: 'ak_acme_0123456789abcdef', created_at: '2026-08-01' };
    await writeFile(appsFile, JSON.stringify([acme]));
    const third = await startRuntimeProcess({ DATA_DIR: dataDir, APPS_FILE: appsFile });
    try {
      const devRefused = await fetch(`${third.urls.account}/account`, { headers });
      expect(devRefused.status).toBe(401);
      const acmeProvider = await fetch(`${third.urls.express}/v1/identity/provider`, { headers: { 'x-service-secret-key': acme.secret_key } });
      expect(acmeProvider.status).toBe(200);
    } finally {
      await stopProcess(third.child);
    }

    for (const file of ['keys/enclave.key', 'keys/account.key', 'keys/op-jwt-signer.jwk.json', 'keys/dev-issuer.jwk.json']) {
      expect((await stat(join(dataDir, file))).mode & 0o777).toBe(0o600);
    }
    // The access log: one JSON line per request.
    expect(first.output()).toMatch(/"service":"account","method":"POST","path":"\/account","status":200,/);
    expect(second.output()).toMatch(/"service":"account","method":"GET","path":"\/account","status":200,/);
    for (const output of [first.output(), second.output()]) {
      expect(output.split('\n')[0]).toMatch(/^LOCAL SANDBOX starting/); // the first line says it is a sandbox
      expect(output).toContain('LOCAL SANDBOX (no AWS');
      expect(output).not.toContain(token.trim());
    }
  }, 90_000); // three runtime starts in a row: 30 s is too short on a loaded machine
});

/**
 * `kill -9` of `npm start`, then `npm start` again at once: the killed runtime lingers as a zombie
 * until its parent reaps it (here a parent that never does), and its DATA_DIR lock is taken over.
 */
describe.runIf(process.env.TEST_DYNAMODB === 'dynalite' && process.platform === 'linux')('restart right after kill -9', () => {
  let dataDir = '';
  afterAll(async () => {
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('starts at once on the same DATA_DIR while the killed runtime is not yet reaped, and keeps its data', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'sandbox-kill9-'));
    // `exec sleep`: the runtime's parent becomes a process that never waits for it.
    const parent = spawn('/bin/sh', ['-c', `"${process.execPath}" infra/local/start.ts --quiet & exec sleep 300`], {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR: dataDir, APPS_FILE: '', ACCOUNT_PORT: '0', ENCLAVE_PORT: '0', EXPRESS_PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let output = '';
      const urls = await new Promise<Record<string, string>>((done, fail) => {
        const timer = setTimeout(() => fail(new Error(`not ready within 60 s:\n${output}`)), 60_000);
        parent.stdout!.on('data', (chunk: Buffer) => {
          output += chunk.toString();
          const ready = /^ready (\{.*\})$/m.exec(output);
          if (ready) {
            clearTimeout(timer);
            done(JSON.parse(ready[1]!));
          }
        });
      });
      const devApp = JSON.parse(await readFile(join(dataDir, 'dev-app.json'), 'utf8'));
      const { stdout: token } = await run(
        process.execPath,
        ['infra/local/token.ts', '--sub', 'kill9', '--ttl', '300', '--data-dir', dataDir, '--account-url', urls.account!],
        { cwd: ROOT },
      );
      const headers = { authorization: `Bearer ${token.trim()}`, 'x-service-secret-key': devApp.secret_key };
      const created = await fetch(`${urls.account}/account`, { method: 'POST', headers });
      expect(created.status).toBe(200);

      const pid = Number((await readFile(join(dataDir, 'runtime.lock'), 'utf8')).split(' ')[0]);
      process.kill(pid, 'SIGKILL');
      const state = async () => (await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')).split(') ')[1]?.[0];
      for (let i = 0; i < 200 && (await state()) !== 'Z'; i++) await new Promise((done) => setTimeout(done, 10));
      expect(await state()).toBe('Z'); // killed, still in the process table

      const restarted = await startRuntimeProcess({ DATA_DIR: dataDir, APPS_FILE: '' });
      try {
        const fetched = await fetch(`${restarted.urls.account}/account`, { headers });
        expect(fetched.status).toBe(200);
      } finally {
        await stopProcess(restarted.child);
      }
    } finally {
      parent.kill('SIGKILL');
    }
  });
});
