/* The language switch's own step in the browser: Gradio's frontend switches its locale (what its settings panel
   calls: its core module exports changeLocale), then the switch's values go on to the server unchanged. */
async (lang, ...rest) => {
  const urls = performance.getEntriesByType("resource").map((e) => e.name)
    .concat([...document.querySelectorAll("script[src], link[href]")].map((e) => e.src || e.href));
  const core = urls.find((u) => /\/assets\/core-[^/]*\.js$/.test(u));
  if (core) { try { (await import(core)).changeLocale(lang); } catch (e) { console.warn(e); } }
  document.documentElement.lang = lang;
  return [lang, ...rest];
}
