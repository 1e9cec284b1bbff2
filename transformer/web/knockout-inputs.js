// js= of the Knock out button (panels/analysis.py): the sentence and the selected heads live
// in the browser, so they are read here and handed to the Python callback as (text, heads).
(text, heads) => (window.axAnalysis ? window.axAnalysis.knockoutInputs(text, heads) : [text, heads])
