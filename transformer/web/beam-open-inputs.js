// js= of the hidden "open hypothesis" button (panels/beam.py): the clicked hypothesis lives in
// the browser (web/beam-tree.js), so its index is handed to the Python callback here.
(state, index) => {
  const t = window.beamTree;
  return [state, t && Number.isInteger(t.selected) ? t.selected : index];
}
