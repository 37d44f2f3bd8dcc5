import { DOMParser, XMLSerializer, type Document, type Element } from '@xmldom/xmldom';
import { DavError } from './dav.errors';

/** The WebDAV namespace. */
export const DAV_NS = 'DAV:';
/** Tributary's own elements in answers (error codes and messages, live properties of its own). */
export const TRIB_NS = 'urn:tributary:dav';

/** A property's name: its XML namespace ('' for none) and local name. */
export interface PropName {
  ns: string;
  name: string;
}

export const propKey = (p: PropName): string => `{${p.ns}}${p.name}`;

/** Largest XML request body read (PROPFIND, PROPPATCH, LOCK): well above what any client sends. */
export const MAX_XML_BYTES = 1024 * 1024;

/**
 * Parses a request body as XML with a namespace-aware parser. Anything that is not well-formed
 * namespace-correct XML is 400; a document type declaration is refused outright (no entity
 * expansion from a request).
 */
export function parseXml(text: string): Document {
  let doc: Document;
  try {
    doc = new DOMParser({
      onError: (level, message) => {
        if (level !== 'warning') throw new Error(message);
      },
    }).parseFromString(text, 'application/xml');
  } catch (err) {
    throw new DavError(400, 'XML_INVALID', `the request body is not well-formed XML: ${reason(err)}`);
  }
  if (doc.doctype) {
    throw new DavError(400, 'XML_INVALID', 'the request body must not contain a document type declaration');
  }
  if (!doc.documentElement) throw new DavError(400, 'XML_INVALID', 'the request body has no root element');
  // The parser takes the character reference &#0;, which XML does not allow (and the catalog cannot
  // store).
  if (new XMLSerializer().serializeToString(doc).includes('\u0000')) {
    throw new DavError(400, 'XML_INVALID', 'the request body must not contain NUL characters (&#0;)');
  }
  return doc;
}

function reason(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n', 1)[0]!.slice(0, 200);
}

/** The element children of an element, in document order. */
export function childElements(parent: Element): Element[] {
  const out: Element[] = [];
  for (let n = parent.firstChild; n; n = n.nextSibling) {
    if (n.nodeType === 1) out.push(n as Element);
  }
  return out;
}

export function isDav(el: Element, name: string): boolean {
  return el.namespaceURI === DAV_NS && el.localName === name;
}

/** The first DAV: child of `parent` with this local name. */
export function davChild(parent: Element, name: string): Element | undefined {
  return childElements(parent).find((c) => isDav(c, name));
}

export function nameOf(el: Element): PropName {
  return { ns: el.namespaceURI ?? '', name: el.localName ?? el.nodeName };
}

/** An element as text, with the namespace declarations it needs, to be stored and sent back as is. */
export function serialize(el: Element): string {
  return new XMLSerializer().serializeToString(el);
}

/** The text content of an element (all its text nodes). */
export function textOf(el: Element): string {
  return el.textContent ?? '';
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
};

/** Escapes text for an XML element or attribute value. */
export function xmlEscape(text: string): string {
  let out = '';
  for (const ch of text) out += ESCAPES[ch] ?? ch;
  return out;
}

/**
 * A property element in an answer: `D:` for DAV:, else with its own default namespace declaration
 * (`xmlns=""` for a property in no namespace).
 */
export function propElement(p: PropName, inner?: string): string {
  const open =
    p.ns === DAV_NS
      ? `D:${p.name}`
      : p.ns === TRIB_NS
        ? `T:${p.name}`
        : `${p.name} xmlns="${xmlEscape(p.ns)}"`;
  const close = p.ns === DAV_NS ? `D:${p.name}` : p.ns === TRIB_NS ? `T:${p.name}` : p.name;
  return inner === undefined || inner === '' ? `<${open}/>` : `<${open}>${inner}</${close}>`;
}

export const XML_HEADER = '<?xml version="1.0" encoding="utf-8"?>\n';
export const ROOT_NS = `xmlns:D="DAV:" xmlns:T="${TRIB_NS}"`;

/** One `D:response` of a multistatus: the href and, per status, the properties' elements. */
export function responseXml(href: string, propstats: Map<number, string[]>): string {
  let out = `<D:response><D:href>${xmlEscape(href)}</D:href>`;
  for (const [status, props] of propstats) {
    out += `<D:propstat><D:prop>${props.join('')}</D:prop><D:status>HTTP/1.1 ${status} ${statusText(status)}</D:status></D:propstat>`;
  }
  return out + '</D:response>';
}

/** A `D:response` with a status of its own (a member that could not be copied, deleted, ...). */
export function statusResponseXml(href: string, status: number, error?: string): string {
  return (
    `<D:response><D:href>${xmlEscape(href)}</D:href>` +
    `<D:status>HTTP/1.1 ${status} ${statusText(status)}</D:status>` +
    (error ? `<D:responsedescription>${xmlEscape(error)}</D:responsedescription>` : '') +
    '</D:response>'
  );
}

export function multistatusXml(responses: string[]): string {
  return `${XML_HEADER}<D:multistatus ${ROOT_NS}>${responses.join('')}</D:multistatus>`;
}

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  204: 'No Content',
  207: 'Multi-Status',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  412: 'Precondition Failed',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  416: 'Range Not Satisfiable',
  422: 'Unprocessable Content',
  423: 'Locked',
  424: 'Failed Dependency',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  507: 'Insufficient Storage',
};

export function statusText(status: number): string {
  return STATUS_TEXT[status] ?? 'Unknown';
}

/**
 * The body of an error answer: RFC 4918's `D:error`, with a precondition element when there is
 * one, and Tributary's stable code and message.
 */
export function errorXml(code: string, message: string, condition?: string): string {
  return (
    `${XML_HEADER}<D:error ${ROOT_NS}>` +
    (condition ? `<D:${condition}/>` : '') +
    `<T:code>${xmlEscape(code)}</T:code><T:message>${xmlEscape(message)}</T:message></D:error>`
  );
}
