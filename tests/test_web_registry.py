"""A view owns its store keys and its part of a link: it declares them (STATE, LINK) and
views.js registers them, so adding a view needs no edit to store.js or url.js. Checked on the
real store.js and url.js under Node.js."""

from explorer.assets import web_file
from tests.helpers import needs_node, run_node

SCRIPT = """
globalThis.document = { createElement: () => ({ getContext: () => ({}) }) }; // canvas.js makes canvases at load
const { createStore, registerState } = await import("./store.js");
const { registerLink, readLink, linkFor } = await import("./url.js");
const out = {};
const trace = (text, forced = []) => ({ srcText: text, src: ["a", "b"], forcedPrefix: forced });
registerState("demo", { sentence: { demoRows: null }, global: { demoChoice: "first" }, keptBy: "demo-origin" });
registerLink("demo", { origin: "demo-origin", param: "demo", keys: ["demoRows"], write: (s) => s.demoRows });
const store = createStore();
out.initial = [store.get().demoRows, store.get().demoChoice];
store.set({ demoRows: "rows", demoChoice: "second" });
out.link = linkFor(store.get(), { href: "http://h/" }); // no trace: no sentence, no params
store.setTrace(trace("A"), "translate");
out.afterNewSentence = [store.get().demoRows, store.get().demoChoice];
store.set({ demoRows: "kept" });
store.setTrace(trace("A", [5, 6]), "demo-origin");
out.afterOwnOrigin = store.get().demoRows;
out.linkOwnOrigin = linkFor(store.get(), { href: "http://h/" });
out.readOwn = readLink({ hash: "#text=A&forced=5.6&origin=demo-origin", search: "" });
out.readOther = readLink({ hash: "#text=A&forced=5.6&origin=elsewhere", search: "" });
const refused = (fn) => { try { fn(); return null; } catch (err) { return err.message; } };
out.taken = [
  refused(() => registerState("other", { sentence: { demoRows: 1 } })),
  refused(() => registerState("other", { global: { step: 3 } })),
  refused(() => registerLink("other", { param: "demo", write: () => "x" })),
  refused(() => registerLink("other", { param: "step", write: () => "x" })),
];
console.log(JSON.stringify(out));
"""


@needs_node
def test_a_view_registers_its_store_keys_and_its_part_of_a_link(tmp_path):
    got = run_node(tmp_path, ("store.js", "url.js"), SCRIPT)
    assert got["initial"] == [None, "first"]  # a store made after registration starts with them
    assert got["link"] == "http://h/"
    assert got["afterNewSentence"] == [None, "second"]  # sentence keys reset, global ones stay
    assert got["afterOwnOrigin"] == "kept"  # the view's own origin keeps its sentence keys
    assert "origin=demo-origin" in got["linkOwnOrigin"] and "forced=5.6" in got["linkOwnOrigin"]
    assert "demo=kept" in got["linkOwnOrigin"]
    assert got["readOwn"]["origin"] == "demo-origin" and got["readOwn"]["forced"] == [5, 6]
    assert got["readOther"]["origin"] is None and got["readOther"]["forced"] == []  # not a registered origin
    assert all(got["taken"]), got["taken"]  # a key or param that is taken is refused, not overwritten


def test_store_and_url_name_no_view_and_every_view_is_registered():
    """store.js and url.js know no view's keys, origins or params; views.js registers them all."""
    views = web_file("views.js")
    assert "registerState(name, view.STATE)" in views and "registerLink(name, view.LINK)" in views
    for module in ("store.js", "url.js"):
        text = web_file(module)
        owned_by_views = (
            "whatif:",
            "beam:",
            "beamOpened",
            "knockout:",
            "pair:",
            "epochs:",
            "norms:",
            "moved:",
            '"whatif"',
            '"beam"',
        )
        for owned in (*owned_by_views, '"pair"'):
            assert owned not in text, f"{module} names {owned}"
    for module, owned in {
        "whatif.js": "whatif",
        "beam-tree.js": "beamOpened",
        "pairs.js": "pair",
        "analysis.js": "knockout",
        "arithmetic.js": "arithmetic",
        "epochs.js": "epochs",
        "hint.js": "hint",
        "moved.js": "norms",
    }.items():
        assert "export const STATE" in web_file(module) and owned in web_file(module), module
