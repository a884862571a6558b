// The commands of svc and which of them a command line needs. Each command's module is loaded only
// when asked for: `svc users create` does not load the server, the identity providers' libraries or
// the model server, and starts in about half the time. Help, no command or an unknown word loads
// them all (the full list, and yargs' own error).
import type { Argv } from 'yargs';
import { SHARED_OPTIONS } from './common.ts';

type Loader = () => Promise<(y: Argv) => Argv>;
const COMMANDS: Record<string, Loader> = {
  serve: () => import('./serve.ts').then((m) => (y) => y.command(m.serveCommand)),
  migrate: () => import('./migrate.ts').then((m) => (y) => y.command(m.migrateCommand)),
  users: () => import('./users.ts').then((m) => (y) => y.command(m.usersCommand)),
  orgs: () => import('./orgs.ts').then((m) => (y) => y.command(m.orgsCommand)),
  audit: () => import('./audit.ts').then((m) => (y) => y.command(m.auditCommand)),
  'model-server': () => import('./modelserver.ts').then((m) => (y) => y.command(m.modelServerCommand)),
  worker: () => import('./worker.ts').then((m) => (y) => y.command(m.workerCommand)),
  storage: () => import('./storage.ts').then((m) => (y) => y.command(m.storageCommand)),
  backup: () => import('./backup.ts').then((m) => (y) => y.command(m.backupCommand)),
  db: () => import('./db.ts').then((m) => (y) => y.command(m.dbCommand)),
  health: () => import('./health.ts').then((m) => (y) => y.command(m.healthCommand)),
  config: () => import('./health.ts').then((m) => (y) => y.command(m.configCommand)),
  routes: () => import('./routes.ts').then((m) => (y) => y.command(m.routesCommand)),
};

/** The global options that take a value, in both spellings yargs accepts. */
const VALUE_OPTIONS = new Set(Object.entries(SHARED_OPTIONS).filter(([, o]) => o.type === 'string')
  .flatMap(([name]) => [`--${name}`, `--${name.replace(/-(\w)/g, (_, c: string) => c.toUpperCase())}`]));

/** The command word of `argv`: its first word that is neither an option nor a global option's value. */
export function commandWord(argv: string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') return undefined;
    if (!a.startsWith('-')) return a;
    if (VALUE_OPTIONS.has(a)) i++;
  }
  return undefined;
}

/** The command modules `argv` needs: the one it names, or all of them. */
export async function commandsFor(argv: string[]): Promise<Array<(y: Argv) => Argv>> {
  const word = commandWord(argv);
  if (word !== undefined && Object.hasOwn(COMMANDS, word)) return [await COMMANDS[word]()];
  return Promise.all(Object.values(COMMANDS).map((load) => load()));
}
