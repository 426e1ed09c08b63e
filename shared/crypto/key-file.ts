import { randomUUID } from 'node:crypto';
import { link, unlink, writeFile } from 'node:fs/promises';

/**
 * Creates `path` (mode 0600) holding `data` unless it exists; true if this call created it.
 * Written under a temporary name and linked into place, so when two processes race for a local
 * key file exactly one wins and the other never reads a partial file.
 */
export async function createKeyFileOnce(path: string, data: string | Uint8Array): Promise<boolean> {
  const temporary = `${path}.${randomUUID()}.tmp`;
  await writeFile(temporary, data, { mode: 0o600, flag: 'wx' });
  try {
    await link(temporary, path); // atomic; EEXIST when another process got there first
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return false;
  } finally {
    await unlink(temporary);
  }
}
