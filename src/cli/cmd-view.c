/* SPDX-License-Identifier: MIT */
/*
 * btrace view: one self-contained HTML page of a snapshot: the timeline of
 * every thread (the Chrome Trace Event JSON of btrace export --timeline,
 * embedded, drawn by the page's own script: zoom and pan with the mouse
 * and keys, the crashed thread first, the fault marked) and the text of
 * btrace report beside it.  No network, no external script, style or
 * font: the page says so to the browser (Content-Security-Policy).
 * docs/export.md, "The HTML page".
 */
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <btrace/decode.h>
#include <btrace/export.h>
#include <btrace/report.h>
#include <btrace/snapshot.h>

#include "cli.h"

#define CMD "view"

/* The page's style and script (written here, no library). */
static const char page_style[] =
"*{box-sizing:border-box}\n"
"body{margin:0;font:13px/1.35 system-ui,sans-serif;background:#fafafa;color:#222;"
"display:flex;flex-direction:column;height:100vh}\n"
"header{padding:6px 10px;background:#263238;color:#eceff1;display:flex;gap:16px;"
"align-items:baseline;flex-wrap:wrap}\n"
"header h1{font-size:15px;margin:0}\n"
"#axis{color:#ffcc80}\n"
"main{flex:1;display:flex;min-height:0}\n"
"#timeline{flex:3;display:flex;flex-direction:column;min-width:0;border-right:1px solid #ccc;"
"position:relative}\n"
"#toolbar{padding:4px 8px;color:#555;border-bottom:1px solid #ddd;font-size:12px}\n"
"#lanes{flex:1;overflow-y:auto;outline:none}\n"
"#lanes:focus{box-shadow:inset 0 0 0 2px #90caf9}\n"
".lane{border-bottom:1px solid #e0e0e0;position:relative}\n"
".lane .label{font-weight:600;padding:3px 8px;background:#eceff1;font-size:12px}\n"
".lane.crashed .label{background:#ffebee;color:#b71c1c}\n"
".lane .plot{position:relative}\n"
".lane canvas{display:block;width:100%;cursor:grab}\n"
".fault-marker{position:absolute;top:0;bottom:0;width:2px;margin-left:-1px;background:#d50000;"
"pointer-events:none}\n"
".fault-marker span{position:absolute;top:0;left:4px;white-space:nowrap;background:#d50000;"
"color:#fff;font-size:11px;padding:0 4px;border-radius:2px}\n"
".fault-marker.left span{left:auto;right:4px}\n"
"#tip{position:fixed;pointer-events:none;background:#263238;color:#fff;padding:4px 6px;"
"font-size:12px;border-radius:3px;display:none;white-space:pre;z-index:9;max-width:60vw}\n"
"#report{flex:2;overflow:auto;background:#fff;min-width:0}\n"
"#report pre{margin:0;padding:8px;font:12px/1.3 ui-monospace,monospace;white-space:pre}\n"
"#errors{color:#b71c1c;white-space:pre-wrap;font:12px monospace}\n"
"#errors:empty{display:none}\n";

static const char page_script[] =
"\n'use strict';\n"
"(function () {\n"
"var errors = [];\n"
"function fail(msg) {\n"
"  errors.push(String(msg));\n"
"  document.getElementById('errors').textContent = errors.join('\\n');\n"
"  document.body.setAttribute('data-status', 'error');\n"
"}\n"
"window.addEventListener('error', function (e) { fail(e.message); });\n"
"var ROW = 18, lanes = [], view = { a: 0, b: 1 }, full = { a: 0, b: 1 };\n"
"var data, axis, tip;\n"
"function thread(map, list, tid) {\n"
"  if (!map[tid]) {\n"
"    map[tid] = { tid: tid, name: 'tid ' + tid, sort: 1e9, open: [], slices: [],\n"
"                 marks: [], depth: 1 };\n"
"    list.push(map[tid]);\n"
"  }\n"
"  return map[tid];\n"
"}\n"
"function load() {\n"
"  var map = {}, list = [], lo = Infinity, hi = -Infinity;\n"
"  data.traceEvents.forEach(function (e) {\n"
"    if (e.ph === 'M') {\n"
"      if (e.name === 'process_name') {\n"
"        document.getElementById('process').textContent = e.args.name;\n"
"        return;\n"
"      }\n"
"      var m = thread(map, list, e.tid);\n"
"      if (e.name === 'thread_name') m.name = e.args.name;\n"
"      if (e.name === 'thread_sort_index') m.sort = e.args.sort_index;\n"
"      return;\n"
"    }\n"
"    var t = thread(map, list, e.tid);\n"
"    lo = Math.min(lo, e.ts); hi = Math.max(hi, e.ts);\n"
"    if (e.ph === 'B') {\n"
"      t.open.push({ name: e.name, cat: e.cat, args: e.args || {}, ts: e.ts,\n"
"                    level: t.open.length });\n"
"    } else if (e.ph === 'E') {\n"
"      var s = t.open.pop();\n"
"      if (!s) throw new Error('timeline: an end without a begin in ' + t.name);\n"
"      s.dur = e.ts - s.ts;\n"
"      t.slices.push(s);\n"
"      t.depth = Math.max(t.depth, s.level + 1);\n"
"    } else if (e.ph === 'i') {\n"
"      t.marks.push(e);\n"
"    }\n"
"  });\n"
"  list.forEach(function (t) {\n"
"    if (t.open.length) throw new Error('timeline: a slice not closed in ' + t.name);\n"
"  });\n"
"  list.sort(function (x, y) { return x.sort - y.sort; });\n"
"  if (!(hi > lo)) { lo = isFinite(lo) ? lo : 0; hi = lo + 1; }\n"
"  full = { a: lo, b: hi + (hi - lo) * 0.02 };\n"
"  view = { a: full.a, b: full.b };\n"
"  return list;\n"
"}\n"
"function hue(s) {\n"
"  var h = 0;\n"
"  for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;\n"
"  return Math.abs(h) % 360;\n"
"}\n"
"function unit(v) {\n"
"  if (axis === 'instructions') return Math.round(v) + ' insn';\n"
"  if (Math.abs(v) >= 1000) return (v / 1000).toFixed(3) + ' ms';\n"
"  return v.toFixed(3) + ' us';\n"
"}\n"
"function build(list) {\n"
"  var box = document.getElementById('lanes'), crashed = data.otherData.crashed_tid;\n"
"  list.forEach(function (t) {\n"
"    var lane = document.createElement('div'), label = document.createElement('div');\n"
"    var plot = document.createElement('div'), cv = document.createElement('canvas');\n"
"    lane.className = 'lane' + (t.tid === crashed ? ' crashed' : '');\n"
"    lane.setAttribute('data-tid', String(t.tid));\n"
"    if (t.tid === crashed) lane.id = 'crashed-thread';\n"
"    label.className = 'label';\n"
"    label.textContent = t.name;\n"
"    plot.className = 'plot';\n"
"    cv.height = t.depth * ROW;\n"
"    cv.style.height = (t.depth * ROW) + 'px';\n"
"    plot.appendChild(cv);\n"
"    t.markers = t.marks.map(function (m) {\n"
"      var d = document.createElement('div'), s = document.createElement('span');\n"
"      d.className = 'fault-marker';\n"
"      if (t.tid === crashed && m.cat === 'fault') d.id = 'fault-marker';\n"
"      d.setAttribute('data-ts', String(m.ts));\n"
"      s.textContent = m.name;\n"
"      d.appendChild(s);\n"
"      plot.appendChild(d);\n"
"      return { el: d, ts: m.ts, ev: m };\n"
"    });\n"
"    lane.appendChild(label);\n"
"    lane.appendChild(plot);\n"
"    box.appendChild(lane);\n"
"    t.canvas = cv;\n"
"    lanes.push(t);\n"
"    cv.addEventListener('mousemove', function (e) { hover(t, e); });\n"
"    cv.addEventListener('mouseleave', function () { tip.style.display = 'none'; });\n"
"  });\n"
"}\n"
"function draw() {\n"
"  var span = view.b - view.a;\n"
"  lanes.forEach(function (t) {\n"
"    var cv = t.canvas, w = cv.clientWidth || 800, dpr = window.devicePixelRatio || 1;\n"
"    cv.width = Math.round(w * dpr);\n"
"    cv.height = Math.round(t.depth * ROW * dpr);\n"
"    var g = cv.getContext('2d');\n"
"    g.setTransform(dpr, 0, 0, dpr, 0, 0);\n"
"    g.clearRect(0, 0, w, t.depth * ROW);\n"
"    g.font = '11px system-ui, sans-serif';\n"
"    g.textBaseline = 'middle';\n"
"    t.slices.forEach(function (s) {\n"
"      if (s.ts + s.dur < view.a || s.ts > view.b) return;\n"
"      var x0 = (s.ts - view.a) / span * w, x1 = (s.ts + s.dur - view.a) / span * w;\n"
"      x0 = Math.max(x0, -1); x1 = Math.min(x1, w + 1);\n"
"      var bw = Math.max(x1 - x0, 1), y = s.level * ROW;\n"
"      if (s.cat === 'gap') {\n"
"        g.fillStyle = '#bdbdbd';\n"
"        g.fillRect(x0, 0, bw, t.depth * ROW);\n"
"        g.strokeStyle = '#757575';\n"
"        g.strokeRect(x0 + 0.5, 0.5, bw - 1, t.depth * ROW - 1);\n"
"      } else {\n"
"        g.fillStyle = 'hsl(' + hue(s.name) + ',55%,' +\n"
"          (s.cat === 'signal handler' ? '60%' : '72%') + ')';\n"
"        g.fillRect(x0, y + 1, bw, ROW - 2);\n"
"      }\n"
"      if (bw > 24) {\n"
"        g.save();\n"
"        g.beginPath(); g.rect(x0, y, bw, ROW); g.clip();\n"
"        g.fillStyle = '#111';\n"
"        g.fillText(s.name, Math.max(x0, 0) + 3, y + ROW / 2);\n"
"        g.restore();\n"
"      }\n"
"    });\n"
"    t.markers.forEach(function (m) {\n"
"      var x = (m.ts - view.a) / span * w;\n"
"      m.el.style.left = x + 'px';\n"
"      m.el.style.display = x < -1 || x > w + 1 ? 'none' : '';\n"
"      m.el.className = 'fault-marker' + (x > w / 2 ? ' left' : '');\n"
"    });\n"
"  });\n"
"  document.getElementById('range').textContent =\n"
"    unit(view.a - full.a) + ' .. ' + unit(view.b - full.a);\n"
"}\n"
"function zoom(f, at) {\n"
"  var span = view.b - view.a, c = view.a + span * at, ns = span * f;\n"
"  var min = (full.b - full.a) * 1e-7;\n"
"  if (ns < min) ns = min;\n"
"  if (ns > (full.b - full.a) * 4) ns = (full.b - full.a) * 4;\n"
"  view.a = c - ns * at; view.b = view.a + ns;\n"
"  draw();\n"
"}\n"
"function pan(frac) {\n"
"  var d = (view.b - view.a) * frac;\n"
"  view.a += d; view.b += d;\n"
"  draw();\n"
"}\n"
"function hover(t, e) {\n"
"  var r = t.canvas.getBoundingClientRect(), w = r.width || 1;\n"
"  var ts = view.a + (e.clientX - r.left) / w * (view.b - view.a);\n"
"  var lvl = Math.floor((e.clientY - r.top) / ROW), hit = null;\n"
"  t.slices.forEach(function (s) {\n"
"    if ((s.level === lvl || s.cat === 'gap') && ts >= s.ts && ts <= s.ts + s.dur)\n"
"      hit = s;\n"
"  });\n"
"  if (!hit) { tip.style.display = 'none'; return; }\n"
"  var a = hit.args, lines = [hit.name + '  (' + unit(hit.dur) + ')'];\n"
"  if (a.file) lines.push(a.file + (a.line ? ':' + a.line : ''));\n"
"  if (a.module) lines.push(a.module);\n"
"  if (a.ip) lines.push(a.ip);\n"
"  if (a.reason) lines.push(a.reason);\n"
"  tip.textContent = lines.join('\\n');\n"
"  tip.style.left = (e.clientX + 12) + 'px';\n"
"  tip.style.top = (e.clientY + 12) + 'px';\n"
"  tip.style.display = 'block';\n"
"}\n"
"function controls() {\n"
"  var box = document.getElementById('lanes'), drag = null;\n"
"  box.addEventListener('wheel', function (e) {\n"
"    var r = box.getBoundingClientRect();\n"
"    e.preventDefault();\n"
"    zoom(e.deltaY > 0 ? 1.25 : 0.8, (e.clientX - r.left) / (r.width || 1));\n"
"  }, { passive: false });\n"
"  box.addEventListener('mousedown', function (e) {\n"
"    drag = { x: e.clientX, a: view.a, b: view.b };\n"
"    box.focus();\n"
"  });\n"
"  window.addEventListener('mouseup', function () { drag = null; });\n"
"  window.addEventListener('mousemove', function (e) {\n"
"    if (!drag) return;\n"
"    var w = box.clientWidth || 1, d = (e.clientX - drag.x) / w * (drag.b - drag.a);\n"
"    view.a = drag.a - d; view.b = drag.b - d;\n"
"    draw();\n"
"  });\n"
"  window.addEventListener('keydown', function (e) {\n"
"    var k = e.key;\n"
"    if (k === '+' || k === '=' || k === 'w') zoom(0.8, 0.5);\n"
"    else if (k === '-' || k === '_' || k === 's') zoom(1.25, 0.5);\n"
"    else if (k === 'ArrowLeft' || k === 'a') pan(-0.1);\n"
"    else if (k === 'ArrowRight' || k === 'd') pan(0.1);\n"
"    else if (k === '0') { view.a = full.a; view.b = full.b; draw(); }\n"
"    else if (k === 'f') focusFault();\n"
"    else return;\n"
"    e.preventDefault();\n"
"  });\n"
"  window.addEventListener('resize', draw);\n"
"}\n"
"function focusFault() {\n"
"  var f = document.getElementById('fault-marker');\n"
"  if (!f) return;\n"
"  var ts = Number(f.getAttribute('data-ts')), span = (view.b - view.a) / 8;\n"
"  view.a = ts - span * 0.8; view.b = ts + span * 0.2;\n"
"  draw();\n"
"}\n"
"try {\n"
"  data = JSON.parse(document.getElementById('btrace-data').textContent);\n"
"  axis = data.otherData.time_axis;\n"
"  tip = document.getElementById('tip');\n"
"  document.getElementById('axis').textContent = axis === 'ns' ?\n"
"    'time axis: one clock for all threads' :\n"
"    'time axis: instructions per thread, not time: the order across threads is not known';\n"
"  document.getElementById('axis').title = data.otherData.time_note;\n"
"  build(load());\n"
"  controls();\n"
"  draw();\n"
"  if (document.body.getAttribute('data-status') === 'loading')\n"
"    document.body.setAttribute('data-status', 'ok');\n"
"} catch (e) {\n"
"  fail(e && e.stack ? e.stack : e);\n"
"}\n"
"})();\n";

/*
 * SHA-256 (FIPS 180-4) of the page's script, for its Content-Security-
 * Policy: the policy allows that one script by its hash, computed here
 * from the very bytes written into the page, and no other inline script
 * ('unsafe-inline' is not given for scripts).
 */
struct sha256 {
	uint32_t h[8];
	uint8_t buf[64];
	uint64_t len;
};

static uint32_t ror32(uint32_t x, unsigned n)
{
	return x >> n | x << (32 - n);
}

static void sha256_block(struct sha256 *c, const uint8_t *p)
{
	static const uint32_t k[64] = {
		0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b,
		0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01,
		0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7,
		0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
		0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152,
		0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
		0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
		0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
		0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
		0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08,
		0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
		0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
		0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
	};
	uint32_t w[64], v[8];

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++)
		w[i] = w[i - 16] + w[i - 7] +
		       (ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^ w[i - 15] >> 3) +
		       (ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^ w[i - 2] >> 10);
	memcpy(v, c->h, sizeof(v));
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = v[7] + (ror32(v[4], 6) ^ ror32(v[4], 11) ^
				      ror32(v[4], 25)) +
			      ((v[4] & v[5]) ^ (~v[4] & v[6])) + k[i] + w[i];
		uint32_t t2 = (ror32(v[0], 2) ^ ror32(v[0], 13) ^ ror32(v[0], 22)) +
			      ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));

		memmove(v + 1, v, 7 * sizeof(*v));
		v[4] += t1;
		v[0] = t1 + t2;
	}
	for (int i = 0; i < 8; i++)
		c->h[i] += v[i];
}

/* The SHA-256 of @n bytes at @p, base64 (44 characters and a NUL) into
 * @out. */
static void sha256_base64(const void *p, size_t n, char out[45])
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	struct sha256 c = { { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			      0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 },
			    { 0 }, 0 };
	const uint8_t *q = p;
	uint8_t d[33];
	size_t r;

	for (; n - c.len >= 64; c.len += 64)
		sha256_block(&c, q + c.len);
	r = n - c.len;
	memcpy(c.buf, q + c.len, r);
	c.buf[r++] = 0x80;
	if (r > 56) {
		memset(c.buf + r, 0, 64 - r);
		sha256_block(&c, c.buf);
		r = 0;
	}
	memset(c.buf + r, 0, 56 - r);
	for (int i = 0; i < 8; i++)
		c.buf[56 + i] = (uint8_t)((uint64_t)n * 8 >> (56 - 8 * i));
	sha256_block(&c, c.buf);
	for (int i = 0; i < 32; i++)
		d[i] = (uint8_t)(c.h[i / 4] >> (24 - 8 * (i % 4)));
	d[32] = 0;
	for (int i = 0, o = 0; i < 33; i += 3) {
		uint32_t x = (uint32_t)d[i] << 16 |
			     (uint32_t)(i + 1 < 33 ? d[i + 1] : 0) << 8 |
			     (i + 2 < 33 ? d[i + 2] : 0);

		out[o++] = b64[x >> 18 & 63];
		out[o++] = b64[x >> 12 & 63];
		out[o++] = i + 1 < 32 ? b64[x >> 6 & 63] : '=';
		out[o++] = i + 2 < 32 ? b64[x & 63] : '=';
	}
	out[44] = '\0';
}

/* @s for HTML text or an attribute value. */
static void html_text(FILE *f, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		switch (s[i]) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(s[i], f);
		}
	}
}

/*
 * JSON inside <script type="application/json">: '<', '>' and '&' occur
 * only inside strings (the JSON writer escapes the rest), where \u003c
 * means the same character, so no "</script>" or "<!--" can end or
 * change the element.
 */
static void html_json(FILE *f, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '<' || s[i] == '>' || s[i] == '&')
			fprintf(f, "\\u%04x", (unsigned char)s[i]);
		else
			fputc(s[i], f);
	}
}

/* The page of @rep: @json (the Chrome Trace Event JSON), @text (the
 * report) into @f. */
static void page(FILE *f, const struct btrace_report *rep, const char *json,
		 size_t jlen, const char *text, size_t tlen)
{
	const struct btrace_decode_result *r = rep->decode;
	const char *cmd = r->command ? cli_esc(r->command) : "?";
	const char *sig = rep->has_signal && rep->signal.name ?
			  rep->signal.name : NULL;

	char hash[45];

	/* the script element's text, exactly: what the hash is of */
	sha256_base64(page_script, sizeof(page_script) - 1, hash);
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
		"<meta charset=\"utf-8\">\n"
		"<meta http-equiv=\"Content-Security-Policy\" content=\""
		"default-src 'none'; style-src 'unsafe-inline'; "
		"script-src 'sha256-%s'\">\n"
		"<meta name=\"generator\" content=\"btrace view\">\n"
		"<title>btrace: ", hash);
	html_text(f, cmd, strlen(cmd));
	fprintf(f, " (pid %d)%s%s</title>\n<style>\n%s</style>\n</head>\n"
		"<body data-status=\"loading\">\n<header><h1>btrace view</h1>"
		"<span id=\"process\"></span><span id=\"signal\">", r->pid,
		sig ? ", " : "", sig ? sig : "", page_style);
	if (sig)
		html_text(f, sig, strlen(sig));
	fputs("</span><span id=\"axis\"></span></header>\n<main>\n"
	      "<section id=\"timeline\"><div id=\"toolbar\">zoom: wheel or + -"
	      "; pan: drag or \u2190 \u2192 (a d); 0: all; f: the fault"
	      "; <span id=\"range\"></span></div>\n"
	      "<div id=\"lanes\" tabindex=\"0\"></div></section>\n"
	      "<aside id=\"report\"><pre id=\"report-text\">", f);
	html_text(f, text, tlen);
	fputs("</pre></aside>\n</main>\n<div id=\"tip\"></div>\n"
	      "<div id=\"errors\"></div>\n"
	      "<script type=\"application/json\" id=\"btrace-data\">", f);
	html_json(f, json, jlen);
	fprintf(f, "</script>\n<script>%s</script>\n</body>\n</html>\n",
		page_script);
}

int cli_view_page(FILE *f, const char *path, const struct btrace_report *rep)
{
	char *json = NULL, *text = NULL;
	size_t jlen = 0, tlen = 0;
	FILE *mj = open_memstream(&json, &jlen);
	FILE *mt = open_memstream(&text, &tlen);
	int rc = -1;

	if (mj && mt) {
		cli_timeline_chrome(mj, rep);
		cli_report_text(mt, path, rep, 16, 16);
		if (!fflush(mj) && !fflush(mt) && !ferror(mj) && !ferror(mt)) {
			page(f, rep, json, jlen, text, tlen);
			rc = fflush(f) || ferror(f) ? -1 : 0;
		}
	}
	if (mj)
		fclose(mj);
	if (mt)
		fclose(mt);
	free(json);
	free(text);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: btrace view FILE -o OUT.html [options]\n"
		"\n"
		"Write one self-contained HTML page (no network, no external script\n"
		"or font) with the timeline of every thread, zoomable, the crashed\n"
		"thread first and the fault marked, and the report beside it.\n"
		"\n"
		"  -o, --output OUT   the page to write\n"
		"  -f, --force        replace OUT if it exists\n"
		"  --last N           the last N call entries of each thread\n"
		"                     (default %d)\n"
		"  --thread TID       this thread only\n"
		"  --debug-dir DIR    separate debug info root (default /usr/lib/debug)\n"
		"  --no-disk          never read code from files on disk\n"
		"  --no-debuginfod    never download debug info (DEBUGINFOD_URLS)\n"
		"  -v, --verbose      list every mapping without code, also those the\n"
		"                     trace never entered\n"
		"  -h, --help         this text\n", CLI_TIMELINE_LAST);
	cli_help_end(f, "view");
}

int cmd_view(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "last", required_argument, NULL, 'l' },
		CLI_DECODE_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct btrace_decode_opts d = { .sz = sizeof(d) };
	struct btrace_decode_result *r;
	struct btrace_snapshot *snap;
	struct btrace_report *rep;
	struct btrace_error err;
	char dir[PATH_MAX], *html = NULL;
	size_t hlen = 0;
	const char *out = NULL;
	uint64_t last = CLI_TIMELINE_LAST;
	uint32_t flags = 0;
	FILE *mh;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:fhv", lo, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; continue;
		case 'f': flags |= BTRACE_EXPORT_FORCE; continue;
		case 'l':
			if (cli_parse_u64(optarg, &last) || !last)
				return cli_usage(CMD, "--last: '%s' is not a positive number", optarg);
			continue;
		case 'h': usage(stdout); return CLI_EXIT_OK;
		}
		rc = cli_decode_option(CMD, c, optarg, &d);
		if (rc > 0)
			return rc;
		if (rc < 0)
			return cli_bad_option(CMD, c, argv);
	}
	if (!out)
		return cli_usage(CMD, "no output given: -o OUT.html is required");
	rc = cli_decode_open(CMD, argc, argv, &d, &snap, dir);
	if (rc)
		return rc;
	rc = cli_timeline_decode(CMD, snap, &d, last, &r, &rep);
	if (rc) {
		btrace_snapshot_free(snap);
		return rc;
	}
	mh = open_memstream(&html, &hlen);
	rc = mh && !cli_view_page(mh, argv[optind], rep) ? CLI_EXIT_OK :
	     CLI_EXIT_FAIL;
	if (rc != CLI_EXIT_OK)
		rc = cli_failf(CMD, NULL, "%s: render the page failed: out of memory", out);
	else if (btrace_export_file(out, html, hlen, flags, &err) < 0)
		rc = cli_fail(CMD, &err);
	else
		printf("wrote %s: %zu thread%s, the timeline %s\n", out,
		       rep->nthreads, rep->nthreads == 1 ? "" : "s",
		       rep->timeline_timed ? "in time order" :
		       "by instructions per thread (no times in the trace)");
	if (mh)
		fclose(mh);
	free(html);
	btrace_report_free(rep);
	btrace_decode_result_free(r);
	btrace_snapshot_free(snap);
	return rc;
}
