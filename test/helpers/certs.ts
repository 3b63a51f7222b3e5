/**
 * Test certificates made with the `openssl` CLI in a temporary directory: a CA, and leaf certificates signed
 * by it for servers (with subject alternative names) and clients (for mutual TLS).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface CertFiles {
  key: string;
  cert: string;
}

export interface TestCa extends CertFiles {
  dir: string;
  /** Issues a certificate signed by this CA. `days` may be negative-free only; use `notAfterDays` < 1 for soon. */
  issue(
    name: string,
    options?: { dns?: string[]; ips?: string[]; cn?: string; days?: number; client?: boolean },
  ): CertFiles;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: 'pipe' });
}

export function createCa(commonName = 'Vigie Test CA'): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'vigie-certs-'));
  const key = join(dir, 'ca.key');
  const cert = join(dir, 'ca.pem');
  openssl(
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '30',
      '-subj',
      `/CN=${commonName}`,
    ],
    dir,
  );
  return {
    dir,
    key,
    cert,
    issue(name, options = {}) {
      const leafKey = join(dir, `${name}.key`);
      const csr = join(dir, `${name}.csr`);
      const leafCert = join(dir, `${name}.pem`);
      const ext = join(dir, `${name}.ext`);
      const alt = [...(options.dns ?? []).map((dns) => `DNS:${dns}`), ...(options.ips ?? []).map((ip) => `IP:${ip}`)];
      writeFileSync(
        ext,
        [
          'basicConstraints=CA:FALSE',
          `extendedKeyUsage=${options.client ? 'clientAuth' : 'serverAuth'}`,
          ...(alt.length > 0 ? [`subjectAltName=${alt.join(',')}`] : []),
        ].join('\n'),
      );
      openssl(
        [
          'req',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:P-256',
          '-nodes',
          '-keyout',
          leafKey,
          '-out',
          csr,
          '-subj',
          `/CN=${options.cn ?? name}`,
        ],
        dir,
      );
      openssl(
        [
          'x509',
          '-req',
          '-in',
          csr,
          '-CA',
          cert,
          '-CAkey',
          key,
          '-CAcreateserial',
          '-out',
          leafCert,
          '-days',
          String(options.days ?? 30),
          '-extfile',
          ext,
        ],
        dir,
      );
      return { key: leafKey, cert: leafCert };
    },
  };
}

export function readPem(path: string): Buffer {
  return readFileSync(path);
}
