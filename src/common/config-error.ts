/**
 * A problem in the config file, naming the file, the key path (`http-checks[2].port`) and the problem. Thrown by
 * the config loader and by the parts that resolve their own config sections, so it lives outside config/.
 */
export class ConfigError extends Error {
  constructor(
    readonly file: string | null,
    readonly key: string,
    readonly problem: string,
  ) {
    super(`${file ?? '<defaults>'}: ${key === '' ? '' : `${key}: `}${problem}`);
  }
}
