import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import solc from 'solc';
import { describe, expect, it } from 'vitest';
import { sandboxTokenArtifact } from '../../infra/local/contracts/sandbox-token.artifact.ts';
import { CONTRACT_TARGETS, compileContracts, SOLC_VERSION } from '../../infra/scripts/compile-contracts.ts';
import { sponsoredExecutorArtifact } from '../../shared/chains/evm/contracts/sponsored-executor.artifact.ts';

const ROOT = resolve(import.meta.dirname, '../..');

describe('checked-in contract artifacts', () => {
  it('are exactly what `npm run contracts` produces from the current sources', { timeout: 60_000 }, async () => {
    const fresh = await compileContracts();

    expect(fresh.map((artifact) => artifact.path)).toEqual(CONTRACT_TARGETS.map((target) => target.artifact));
    for (const artifact of fresh) {
      const checkedIn = await readFile(join(ROOT, artifact.path), 'utf8');
      expect(checkedIn, `${artifact.path} is stale: run npm run contracts`).toBe(artifact.text);
    }
  });

  it('record the pinned compiler, which is the installed one', () => {
    expect(sponsoredExecutorArtifact.compiler).toBe(SOLC_VERSION);
    expect(sandboxTokenArtifact.compiler).toBe(SOLC_VERSION);
    expect(`${solc.version()}.`.startsWith(`${SOLC_VERSION}.`)).toBe(true);
  });
});
