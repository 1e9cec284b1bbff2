// js= of the step after /head_importance (panels/analysis.py): the panel draws the three maps.
(data) => { if (window.axAnalysis) window.axAnalysis.showImportance(data); }
