/**
 * Damage to the database file, found when it is opened (docs/durability.md, "Damaged state" and "Recovering a
 * damaged database"). Every table goes through SQLite's `quick_check` (the b-tree structure of its pages and of its
 * indexes, NOT NULL constraints): 0.2 to 0.5 s for a 70 MB file holding 300,000 history rows (docs/durability.md).
 *
 * Damage in a table of derived state (the streams' action state and checkpoints, the index snapshots) costs that
 * state only: the table and those of its group are set aside under a `damaged_` name, a new empty one takes its
 * place, and the streams start afresh (src/stream/durability/snapshot-restore.ts reports it). A damaged table is
 * renamed rather than emptied because emptying or dropping it reads the damaged pages and fails; renaming only rewrites
 * the schema. Damage anywhere else, or a file that is not a database, stops the start with a DatabaseDamagedError.
 */
import type Database from 'better-sqlite3';

/**
 * The tables that the streams rebuild, each with the tables set aside with it when it is damaged. Damaged action
 * states go alone: the last checkpoint's journal position stays, so the streams start afresh from there. Damaged
 * checkpoints take the states with them (rows of rounds no checkpoint names would come back as newer ones). An
 * index snapshot is its meta and its entries (children before parents: `index_snapshots` references `index_meta`).
 */
export const STATE_TABLES: readonly string[] = ['stream_state', 'stream_checkpoints'];
export const INDEX_TABLES: readonly string[] = ['index_snapshots', 'index_meta'];
const SET_ASIDE_WITH = new Map<string, readonly string[]>([
  ['stream_state', ['stream_state']],
  ['stream_checkpoints', STATE_TABLES],
  ['index_snapshots', INDEX_TABLES],
  ['index_meta', INDEX_TABLES],
]);

/** The prefix of the tables set aside; they are never checked again (their pages are known to be damaged). */
const SET_ASIDE_PREFIX = 'damaged_';

/** The section of docs/durability.md that says how to recover, named by every message about a damaged file. */
const RECOVERY_DOC = 'docs/durability.md, "Recovering a damaged database"';

export class DatabaseDamagedError extends Error {
  constructor(
    readonly file: string,
    readonly problem: string,
  ) {
    super(
      `the database ${file} is damaged (${problem}): the service does not start on it; stop whatever uses the file and follow ${RECOVERY_DOC}`,
    );
  }
}

/** A derived table found damaged and set aside: its new name, and what `quick_check` (or the read) said. */
export interface SetAsideTable {
  readonly table: string;
  readonly asideAs: string;
  readonly problem: string;
}

/**
 * Checks every table of the open database: throws DatabaseDamagedError when a table that is not derived state is
 * damaged (or when the schema cannot be read); sets aside the damaged derived groups and returns them.
 */
export function checkDatabase(sqlite: Database.Database, file: string): SetAsideTable[] {
  const setAside = findDamage(sqlite, file);
  setAsideAtOpen.set(sqlite, setAside);
  return setAside;
}

/** The derived tables `checkDatabase` set aside when the connection was opened (reported by their part). */
export function tablesSetAsideAtOpen(sqlite: Database.Database): readonly SetAsideTable[] {
  return setAsideAtOpen.get(sqlite) ?? [];
}

const setAsideAtOpen = new WeakMap<Database.Database, SetAsideTable[]>();

function findDamage(sqlite: Database.Database, file: string): SetAsideTable[] {
  let tables: string[];
  try {
    tables = sqlite
      .prepare<[], string>(
        "select name from sqlite_schema where type = 'table' and name not like 'sqlite\\_%' escape '\\' order by name",
      )
      .pluck()
      .all();
  } catch (error) {
    throw new DatabaseDamagedError(file, (error as Error).message);
  }
  const damaged = new Map<string, string>();
  for (const table of tables) {
    if (table.startsWith(SET_ASIDE_PREFIX)) continue;
    const problem = quickCheck(sqlite, table);
    if (problem === null) continue;
    if (!SET_ASIDE_WITH.has(table)) throw new DatabaseDamagedError(file, `table ${table}: ${problem}`);
    damaged.set(table, problem);
  }
  const setAside: SetAsideTable[] = [];
  for (const group of [STATE_TABLES, INDEX_TABLES]) {
    const found = group.filter((table) => damaged.has(table));
    if (found.length === 0) continue;
    const problem = found.map((table) => `table ${table}: ${damaged.get(table) as string}`).join('; ');
    const tables = group.filter((table) =>
      found.some((damagedTable) => (SET_ASIDE_WITH.get(damagedTable) as readonly string[]).includes(table)),
    );
    for (const moved of setAsideTables(sqlite, tables)) setAside.push({ ...moved, problem });
  }
  return setAside;
}

/** What `quick_check` says of one table and its indexes; null when it is sound. SQLite throws, rather than
 *  reporting, when a page cannot be parsed at all. */
function quickCheck(sqlite: Database.Database, table: string): string | null {
  try {
    const lines = sqlite.pragma(`quick_check(${quoted(table)})`, { simple: false }) as { quick_check: string }[];
    const problems = lines.map((line) => line.quick_check).filter((line) => line !== 'ok');
    return problems.length === 0
      ? null
      : problems
          .slice(0, 3)
          .join('; ')
          .replace(/\*\*\* in database main \*\*\*\n/g, '');
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * Renames the tables of one derived group to `damaged_<table>_<seconds since the epoch>` and creates them again,
 * empty, with the same definition and indexes, in one transaction. Returns the new names.
 */
export function setAsideTables(
  sqlite: Database.Database,
  tables: readonly string[],
): { table: string; asideAs: string }[] {
  const stamp = Math.floor(Date.now() / 1000);
  const schemaOf = sqlite.prepare<[string], { type: string; sql: string }>(
    'select type, sql from sqlite_schema where tbl_name = ? and sql is not null order by type desc',
  );
  return sqlite.transaction(() => {
    const definitions = tables.map((table) => ({ table, statements: schemaOf.all(table) }));
    const moved: { table: string; asideAs: string }[] = [];
    for (const { table, statements } of definitions) {
      if (statements.length === 0) continue;
      const asideAs = `${SET_ASIDE_PREFIX}${table}_${stamp}`;
      // The indexes of the renamed table keep their names: drop them from it so that the new table can have them.
      for (const statement of statements)
        if (statement.type === 'index') sqlite.exec(`drop index if exists ${quoted(indexName(statement.sql))}`);
      sqlite.exec(`alter table ${quoted(table)} rename to ${quoted(asideAs)}`);
      moved.push({ table, asideAs });
    }
    // Tables first (parents may come after children in the group), then their indexes.
    for (const { statements } of definitions)
      for (const statement of statements) if (statement.type === 'table') sqlite.exec(statement.sql);
    for (const { statements } of definitions)
      for (const statement of statements) if (statement.type === 'index') sqlite.exec(statement.sql);
    return moved;
  })();
}

function indexName(createIndex: string): string {
  const match = /^create\s+(?:unique\s+)?index\s+(?:if\s+not\s+exists\s+)?[`"[]?([^`"\]\s(]+)/i.exec(createIndex);
  if (match === null) throw new Error(`cannot read the index name of: ${createIndex}`);
  return match[1] as string;
}

function quoted(identifier: string): string {
  return `"${identifier.replace(/"/g, '""')}"`;
}
