/**
 * Jupyter notebooks in the editor: the language server analyses a notebook as one program (its code cells
 * joined, magics masked, LSP 3.17 notebook sync) and publishes each finding on its cell's document.
 */
export const NOTEBOOK_TYPE = 'jupyter-notebook';
