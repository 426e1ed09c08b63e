import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Listens on the port a sandbox component had before (stable URLs across restarts), or on any
 * free one when that port is taken. Used by the sandbox venues and the sandbox bridge.
 */
export async function listenPreferring(server: Server, preferred: number | null, host: string): Promise<number> {
  const attempt = (port: number) =>
    new Promise<number>((done, fail) => {
      server.once('error', fail);
      server.listen(port, host, () => {
        server.off('error', fail);
        done((server.address() as AddressInfo).port);
      });
    });
  if (preferred) {
    try {
      return await attempt(preferred);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    }
  }
  return attempt(0);
}
