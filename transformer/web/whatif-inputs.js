// js= of the What-if button (app.py): the step and the candidate live in the browser, so
// they are read here and handed to the Python callback as its (step, rank) inputs.
(trace, step, rank) => {
  const v = window.attentionExplorer;
  const select = document.querySelector("#candidate select");
  if (!v || !v.trace || !select || select.value === "") return [trace, step, rank];
  return [trace, v.state.step, Number(select.value)];
}
