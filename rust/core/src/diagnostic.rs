//! Diagnostics are data (docs/spec.md §1.6): a code, a message a person can act on,
//! the path relative to the bundle root and a severity.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    InvalidConceptId,
    FileTooLarge,
    InvalidUtf8,
    InvalidFrontmatter,
    MissingType,
    MalformedStaleAfter,
    UnreadableFile,
    UnreadableDirectory,
    SymlinkSkipped,
}

impl Code {
    pub const ALL: [Code; 9] = [
        Code::InvalidConceptId,
        Code::FileTooLarge,
        Code::InvalidUtf8,
        Code::InvalidFrontmatter,
        Code::MissingType,
        Code::MalformedStaleAfter,
        Code::UnreadableFile,
        Code::UnreadableDirectory,
        Code::SymlinkSkipped,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidConceptId => "InvalidConceptId",
            Code::FileTooLarge => "FileTooLarge",
            Code::InvalidUtf8 => "InvalidUtf8",
            Code::InvalidFrontmatter => "InvalidFrontmatter",
            Code::MissingType => "MissingType",
            Code::MalformedStaleAfter => "MalformedStaleAfter",
            Code::UnreadableFile => "UnreadableFile",
            Code::UnreadableDirectory => "UnreadableDirectory",
            Code::SymlinkSkipped => "SymlinkSkipped",
        }
    }

    /// Errors mean the file was skipped; warnings mean it loaded anyway.
    pub fn is_error(self) -> bool {
        !matches!(
            self,
            Code::MissingType | Code::MalformedStaleAfter | Code::SymlinkSkipped
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub code: Code,
    pub message: String,
    pub path: String,
}

impl Diagnostic {
    pub fn new(code: Code, message: impl Into<String>, path: impl Into<String>) -> Self {
        Diagnostic {
            code,
            message: message.into(),
            path: path.into(),
        }
    }

    pub fn severity(&self) -> &'static str {
        if self.code.is_error() {
            "error"
        } else {
            "warning"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_a_name_and_a_severity() {
        for c in Code::ALL {
            assert!(!c.as_str().is_empty());
        }
        let warnings: Vec<&str> = Code::ALL
            .iter()
            .filter(|c| !c.is_error())
            .map(|c| c.as_str())
            .collect();
        assert_eq!(
            warnings,
            ["MissingType", "MalformedStaleAfter", "SymlinkSkipped"]
        );
    }
}
