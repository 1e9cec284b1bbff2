// js= of the Head importance button (panels/analysis.py): the sentence is the one in the viewer.
(text) => (window.axAnalysis ? window.axAnalysis.importanceInputs(text) : [text])
