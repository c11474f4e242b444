import type { ErrorArea } from './types.js';

/** Files a user uploads into a chat (web/upload-routes.ts) and the readers of their tables (core/tables/). */
export const UPLOAD_ERRORS = {
  ERR_UPLOAD_TOO_LARGE: {
    status: 413,
    surfaces: ['http'],
    description: 'The file is larger than the per-file cap (10 MB).',
  },
  ERR_UPLOAD_QUOTA: {
    status: 507,
    surfaces: ['http'],
    description: "The file does not fit in the user's workspace quota; delete files or ask for a larger quota.",
  },
  ERR_UPLOAD_TYPE: {
    status: 415,
    surfaces: ['http', 'tool'],
    description: 'Only .csv, .xlsx, .png, .jpg and .jpeg files are accepted (or read as a table: .csv and .xlsx).',
  },
  ERR_UPLOAD_NAME: {
    status: 400,
    surfaces: ['http', 'tool'],
    description:
      'The file name is missing, too long or has nothing left once path parts and unsafe characters are removed.',
  },
  ERR_UPLOAD_MISMATCH: {
    status: 415,
    surfaces: ['http', 'tool'],
    description:
      'The content is not what the name says (its first bytes are not a PNG, JPEG, XLSX (zip) or text file).',
  },
  ERR_UPLOAD_ENCODING: {
    status: 422,
    surfaces: ['http'],
    description: 'The text is not UTF-8 (with or without BOM) or UTF-16 with a BOM; save it as UTF-8.',
  },
  ERR_DOCUMENT_INVALID: {
    status: 422,
    surfaces: ['http', 'tool'],
    description:
      'An upload (http) or read_document (tool): the PDF, DOCX or PPTX cannot be read (damaged, encrypted, a part missing or with a DOCTYPE, or the PDF reader ran past its time, memory or output bounds).',
  },
  ERR_UPLOAD_ZIP_BOMB: {
    status: 422,
    surfaces: ['http', 'tool'],
    description:
      'The workbook unpacks past the caps (entries, bytes of an entry or of all of them): refused before it is inflated.',
  },
  ERR_UPLOAD_XLSX_INVALID: {
    status: 422,
    surfaces: ['http', 'tool'],
    description: 'The workbook cannot be read (not an XLSX, encrypted, ZIP64, a DOCTYPE, or a part missing).',
  },
  ERR_UPLOAD_ROW_TOO_LARGE: {
    status: 422,
    surfaces: ['http', 'tool'],
    description: 'A row of the table is longer than the cap (256 KiB of text).',
  },
  ERR_UPLOAD_NOT_FOUND: {
    status: 404,
    surfaces: ['http', 'tool'],
    description: "No such uploaded file in the user's workspace (or another user's).",
  },
  ERR_UPLOAD_WORKSPACE: {
    status: 409,
    surfaces: ['http'],
    description:
      "The workspace's uploads folder is not a folder (a link or a file put there from inside the sandbox): nothing is written.",
  },
  ERR_UPLOAD_SHEET_NOT_FOUND: {
    status: 404,
    surfaces: ['http', 'tool'],
    description: 'The workbook has no sheet of that name.',
  },
  ERR_UPLOAD_RANGE: {
    status: 400,
    surfaces: ['http', 'tool'],
    description: 'The range is not an A1 range such as A1:D20 (or a sheet name before it).',
  },
  ERR_UPLOAD_BODY: {
    status: 400,
    surfaces: ['http'],
    description: 'The upload has no body, or its X-File-Name header is missing.',
  },
} as const satisfies ErrorArea;
