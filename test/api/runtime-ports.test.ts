import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/free-port.ts';
import { type RuntimeProcess, startRuntimeProcess, stopProcess } from './support/global-setup.ts';

/**
 * A runtime never races its own sandbox components for a port (issue 20: a start once failed with
 * "EXPRESS_PORT=… is in use (…, by this sandbox's ETH chain)": a port probed free, then bound by an
 * anvil before the service). The services listen before anything else starts, and each anvil binds
 * port 0 itself and says which port it got. Runs once (embedded engine).
 */
describe.runIf(process.env.TEST_DYNAMODB === 'dynalite')('ports of a local runtime', () => {
  const dirs: string[] = [];
  const runtimes: RuntimeProcess[] = [];
  afterAll(async () => {
    await Promise.all(runtimes.map((runtime) => stopProcess(runtime.child)));
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  }, 60_000);

  it('three runtimes started at once, with ports 0 or with a port a component of its own remembers: every listener has a port of its own', {
    timeout: 180_000,
  }, async () => {
    for (let i = 0; i < 3; i++) dirs.push(await mkdtemp(join(tmpdir(), 'sandbox-ports-')));
    // The trap: the local Step Functions of the third runtime remember (from "an earlier start") the
    // very port its account service is given. It starts after the services listen, so it finds
    // that port taken and takes another; were it first, the account service would find it taken.
    const account = await freePort();
    await mkdir(join(dirs[2]!, 'stepfunctions'), { recursive: true });
    await writeFile(join(dirs[2]!, 'stepfunctions', 'executions.json'), JSON.stringify({ version: 1, port: account, executions: {} }));
    const started = await Promise.allSettled([
      startRuntimeProcess({ DATA_DIR: dirs[0]!, APPS_FILE: '' }, ['--quiet']),
      startRuntimeProcess({ DATA_DIR: dirs[1]!, APPS_FILE: '' }, ['--quiet']),
      startRuntimeProcess({ DATA_DIR: dirs[2]!, APPS_FILE: '', ACCOUNT_PORT: String(account) }, ['--quiet']),
    ]);
    for (const result of started) if (result.status === 'fulfilled') runtimes.push(result.value);
    for (const result of started) if (result.status === 'rejected') throw result.reason;
    expect(runtimes[2]!.urls.account).toBe(`http://127.0.0.1:${account}`);

    const owners = new Map<string, string>();
    for (const [index, runtime] of runtimes.entries()) {
      const listeners = await listenersOf(runtime);
      expect(Object.keys(listeners).length).toBeGreaterThanOrEqual(3 + 5 + 5 + 3); // services, chains, venues, bridge + Step Functions + DynamoDB
      for (const [name, url] of Object.entries(listeners)) {
        const port = new URL(url).port;
        expect(owners.get(port), `port ${port}: runtime ${index} ${name}`).toBeUndefined();
        owners.set(port, `runtime ${index} ${name}`);
      }
    }
    expect(owners.get(String(account))).toBe('runtime 2 account service');
  });
});

/** Every listener a runtime names: its services, chains, venues, bridge, Step Functions and DynamoDB. */
async function listenersOf(runtime: RuntimeProcess): Promise<Record<string, string>> {
  const get = async (path: string) => (await fetch(`${runtime.urls.account}${path}`)).json() as Promise<any>;
  const [chains, venues, bridge] = await Promise.all([get('/sandbox/chains'), get('/sandbox/venues'), get('/sandbox/bridge')]);
  const banner = runtime.output();
  const stepFunctions = /Step Functions \(local, same ASL\) (http:\/\/\S+)/.exec(banner)?.[1];
  const dynamodb = /DynamoDB at (http:\/\/[^)\s]+)/.exec(banner)?.[1];
  expect(stepFunctions, banner).toBeDefined();
  expect(dynamodb, banner).toBeDefined();
  return {
    ...Object.fromEntries(Object.entries(runtime.urls).map(([service, url]) => [`${service} service`, url])),
    ...Object.fromEntries((chains.chains as { chain: string; rpc_url: string }[]).map((chain) => [`${chain.chain} chain`, chain.rpc_url])),
    ...Object.fromEntries((venues.venues as { dex: string; url: string }[]).map((venue) => [venue.dex, venue.url])),
    'sandbox bridge': bridge.bridge.url as string,
    'Step Functions': stepFunctions!,
    DynamoDB: dynamodb!,
  };
}
