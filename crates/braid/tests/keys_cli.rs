//! `braid genkey` and `braid pubkey` as a user runs them.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn braid(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run braid");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn hex_to_base64(hex: &str) -> String {
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    braid_core::crypto::PublicKey(bytes.try_into().unwrap()).to_base64()
}

#[test]
fn pubkey_follows_rfc7748() {
    // RFC 7748 §6.1: Alice's private key and her public key.
    let private = hex_to_base64("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
    let public = hex_to_base64("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
    let out = braid(&["pubkey"], format!("{private}\n").as_bytes());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("{public}\n")
    );
}

#[test]
fn genkey_makes_a_fresh_key_that_pubkey_reads() {
    let a = braid(&["genkey"], b"");
    let b = braid(&["genkey"], b"");
    assert!(a.status.success() && b.status.success());
    let (a, b) = (
        String::from_utf8(a.stdout).unwrap(),
        String::from_utf8(b.stdout).unwrap(),
    );
    assert_eq!(a.len(), 45, "44 base64 characters and a newline: {a:?}");
    assert_ne!(a, b, "two keys from the OS RNG");
    let public = braid(&["pubkey"], a.as_bytes());
    assert!(public.status.success());
    let public = String::from_utf8(public.stdout).unwrap();
    assert_eq!(public.len(), 45);
    assert_ne!(public, a);
}

#[test]
fn pubkey_refuses_what_is_not_a_key_in_one_line() {
    let zeros = b"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n";
    let long = vec![b'A'; 10_000];
    for (input, says) in [
        (
            &b"not base64!\n"[..],
            "not a private key: key is not valid base64",
        ),
        (b"AAAA\n", "not a private key: key has 3 bytes"),
        (b"", "not a private key"),
        (zeros, "not a private key: key is all zeros"),
        (&long, "more than 1024 bytes"),
    ] {
        let out = braid(&["pubkey"], input);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("braid: error: stdin: "), "{err}");
        assert!(err.contains(says), "{err}");
    }
}
