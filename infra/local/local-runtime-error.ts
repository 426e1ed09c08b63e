/**
 * A start-up problem the user can fix (a busy port, a DATA_DIR in use, a bad APPS_FILE): `npm start`
 * prints its message as one line and exits 1, with no stack trace. The message never holds a secret.
 */
export class LocalRuntimeError extends Error {
  override readonly name = 'LocalRuntimeError';
}
