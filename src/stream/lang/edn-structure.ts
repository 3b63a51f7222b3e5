/**
 * The structural check of EDN text before edn-data reads it (edn.ts). edn-data does the value conversion but is lax
 * about structure: unclosed input gives null, an odd map drops its last key, `[1 2}` closes a vector as a set. This
 * scan reports the first problem with its position instead, and enforces the nesting limit. It is one linear
 * pass, cheap next to the parse itself. It knows nothing of EdnError: its caller words the rejection.
 */

const SUPPORTED_TAGS = new Set(['env', 'secret', 'object']);
const INT = /^[-+]?(0|[1-9][0-9]*)N?$/;
const FLOAT = /^[-+]?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?(0|[1-9][0-9]*))?M?$/;
/** `1/2`: edn-data reads it as a symbol, which edn.ts turns into its double. */
export const RATIO = /^([-+]?[0-9]+)\/([0-9]+)$/;
const STRING_ESCAPES = new Set(['t', 'r', 'n', 'b', 'f', '\\', '"']);
const CLOSERS: Record<string, string> = { '(': ')', '[': ']', '{': '}', '#{': '}' };

interface Position {
  line: number;
  column: number;
}

interface Frame extends Position {
  open: string;
  forms: number;
  lastForm: Position | null;
}

interface Prefix extends Position {
  text: string;
  depth: number;
}

const at = (p: Position): string => `line ${p.line}, column ${p.column}`;

function isDelimiter(char: string): boolean {
  return /[\s,";()[\]{}]/.test(char);
}

/** Calls `reject` (which throws) with the position and what was expected at the first structural problem. */
export function checkStructure(text: string, maxDepth: number, reject: (message: string) => never): void {
  const stack: Frame[] = [];
  const prefixes: Prefix[] = [];
  let topForms = 0;
  let line = 1;
  let column = 1;
  let i = 0;
  const fail: (where: Position, message: string) => never = (where, message) =>
    reject(`Invalid EDN at ${at(where)}: ${message}`);
  const advance = (count: number): void => {
    for (let k = 0; k < count; k++) {
      if (text[i] === '\n') {
        line++;
        column = 1;
      } else column++;
      i++;
    }
  };
  const completeForm = (start: Position): void => {
    while (prefixes.length > 0 && (prefixes[prefixes.length - 1] as Prefix).depth === stack.length) {
      if ((prefixes.pop() as Prefix).text === '#_') return;
    }
    const frame = stack[stack.length - 1];
    if (frame === undefined) {
      if (++topForms > 1) fail(start, 'expected end of input after the first value');
    } else {
      frame.forms++;
      frame.lastForm = start;
    }
  };
  const checkNoDanglingPrefix = (where: Position): void => {
    const prefix = prefixes[prefixes.length - 1];
    if (prefix !== undefined && prefix.depth === stack.length)
      fail(where, `expected a value after '${prefix.text}' (at ${at(prefix)})`);
  };
  while (i < text.length) {
    const char = text[i] as string;
    const start = { line, column };
    if (/[\s,]/.test(char)) {
      advance(1);
    } else if (char === ';') {
      while (i < text.length && text[i] !== '\n') advance(1);
    } else if (char === '"') {
      advance(1);
      for (;;) {
        if (i >= text.length) fail({ line, column }, `expected '"' to close the string opened at ${at(start)}`);
        const c = text[i];
        if (c === '"') break;
        if (c === '\\') {
          const escaped = text[i + 1] ?? '';
          const escapeAt = { line, column };
          if (escaped === 'u') {
            if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail(escapeAt, 'expected 4 hex digits after \\u');
            advance(6);
            continue;
          }
          if (!STRING_ESCAPES.has(escaped)) fail(escapeAt, `invalid escape '\\${escaped}' in a string`);
          advance(2);
          continue;
        }
        advance(1);
      }
      advance(1);
      completeForm(start);
    } else if (char === '(' || char === '[' || char === '{' || (char === '#' && text[i + 1] === '{')) {
      const open = char === '#' ? '#{' : char;
      if (stack.length >= maxDepth)
        fail(start, `collections nest deeper than the limit of ${maxDepth} levels (streams.max-edn-depth)`);
      advance(open.length);
      stack.push({ open, line: start.line, column: start.column, forms: 0, lastForm: null });
    } else if (char === ')' || char === ']' || char === '}') {
      checkNoDanglingPrefix(start);
      const frame = stack.pop();
      if (frame === undefined) fail(start, `unexpected '${char}' with nothing to close`);
      const expected = CLOSERS[frame.open];
      if (char !== expected)
        fail(start, `expected '${expected}' to close '${frame.open}' opened at ${at(frame)}, got '${char}'`);
      if (frame.open === '{' && frame.forms % 2 === 1) {
        fail(
          start,
          `the map opened at ${at(frame)} has a key with no value (the last key is at ${at(frame.lastForm as Position)})`,
        );
      }
      advance(1);
      completeForm(frame);
    } else if (char === '#') {
      const next = text[i + 1] ?? '';
      if (next === '_') {
        prefixes.push({ text: '#_', depth: stack.length, ...start });
        advance(2);
      } else if (next === '"') {
        fail(start, 'regular expression literals (#"...") are not supported');
      } else if (/[A-Za-z]/.test(next)) {
        let end = i + 1;
        while (end < text.length && !isDelimiter(text[end] as string)) end++;
        const tag = text.slice(i + 1, end);
        if (!SUPPORTED_TAGS.has(tag))
          fail(start, `unsupported tag #${tag} (only #env, #secret and #object are supported)`);
        prefixes.push({ text: `#${tag}`, depth: stack.length, ...start });
        advance(end - i);
      } else {
        fail(start, `unsupported dispatch '#${next}'`);
      }
    } else {
      let end = i + 1;
      // A character literal takes the character after the backslash even when it is a delimiter (`\(`).
      if (char === '\\') end++;
      while (end < text.length && !isDelimiter(text[end] as string)) end++;
      // Inside `#object[...]`, Clojure's own tokens (`0x6b5f8707`, `fn$x`): read, then dropped as a whole.
      if (!prefixes.some((prefix) => prefix.text === '#object' && prefix.depth < stack.length))
        checkToken(text.slice(i, end), start, fail);
      advance(end - i);
      completeForm(start);
    }
  }
  const end = { line, column };
  checkNoDanglingPrefix(end);
  const open = stack[stack.length - 1];
  if (open !== undefined) fail(end, `expected '${CLOSERS[open.open]}' to close '${open.open}' opened at ${at(open)}`);
  if (topForms === 0) fail(end, 'expected a value, got end of input');
}

function checkToken(token: string, start: Position, fail: (where: Position, message: string) => never): void {
  if (/^[-+]?[0-9]/.test(token)) {
    const ratio = RATIO.exec(token);
    if (ratio !== null && Number(ratio[2]) === 0) fail(start, `invalid ratio ${token}: division by zero`);
    if (ratio === null && !INT.test(token) && !FLOAT.test(token)) fail(start, `invalid number ${token}`);
  } else if (token.length === 2 && token[0] === '\\' && isDelimiter(token[1] as string)) {
    fail(start, `the character literal ${token} is not supported, use a string`);
  } else if (token.startsWith(':')) {
    if (token.length === 1 || token[1] === ':' || token.endsWith('/')) fail(start, `invalid keyword ${token}`);
  }
}
