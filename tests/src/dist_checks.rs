//! Checks of layouts, distributed matrices and transform (filled in with redblue-dist).
