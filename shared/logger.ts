/**
 * Structured JSON logs (one line each, CloudWatch-friendly). Errors are logged by name and
 * message only, never with request bodies or headers, so no secret can reach the log.
 */
type Level = 'debug' | 'info' | 'warn' | 'error';

function serialise(value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message };
  return value;
}

function write(level: Level, message: string, fields: Record<string, unknown> = {}) {
  if (process.env.LOG_LEVEL === 'silent') return;
  const entry: Record<string, unknown> = { level, message, time: new Date().toISOString() };
  for (const [key, value] of Object.entries(fields)) entry[key] = serialise(value);
  const line = JSON.stringify(entry);
  if (level === 'error' || level === 'warn') console.error(line);
  else console.log(line);
}

export const logger = {
  info: (message: string, fields?: Record<string, unknown>) => write('info', message, fields),
  warn: (message: string, fields?: Record<string, unknown>) => write('warn', message, fields),
  error: (message: string, fields?: Record<string, unknown>) => write('error', message, fields),
};
