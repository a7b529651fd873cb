//! Sub-processes nest at most 64 deep (parsing recurses once per level).

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub x: u32,
}

process! {
    pub P: D {
        start b;
        subprocess s1 {
        start b1;
        subprocess s2 {
        start b2;
        subprocess s3 {
        start b3;
        subprocess s4 {
        start b4;
        subprocess s5 {
        start b5;
        subprocess s6 {
        start b6;
        subprocess s7 {
        start b7;
        subprocess s8 {
        start b8;
        subprocess s9 {
        start b9;
        subprocess s10 {
        start b10;
        subprocess s11 {
        start b11;
        subprocess s12 {
        start b12;
        subprocess s13 {
        start b13;
        subprocess s14 {
        start b14;
        subprocess s15 {
        start b15;
        subprocess s16 {
        start b16;
        subprocess s17 {
        start b17;
        subprocess s18 {
        start b18;
        subprocess s19 {
        start b19;
        subprocess s20 {
        start b20;
        subprocess s21 {
        start b21;
        subprocess s22 {
        start b22;
        subprocess s23 {
        start b23;
        subprocess s24 {
        start b24;
        subprocess s25 {
        start b25;
        subprocess s26 {
        start b26;
        subprocess s27 {
        start b27;
        subprocess s28 {
        start b28;
        subprocess s29 {
        start b29;
        subprocess s30 {
        start b30;
        subprocess s31 {
        start b31;
        subprocess s32 {
        start b32;
        subprocess s33 {
        start b33;
        subprocess s34 {
        start b34;
        subprocess s35 {
        start b35;
        subprocess s36 {
        start b36;
        subprocess s37 {
        start b37;
        subprocess s38 {
        start b38;
        subprocess s39 {
        start b39;
        subprocess s40 {
        start b40;
        subprocess s41 {
        start b41;
        subprocess s42 {
        start b42;
        subprocess s43 {
        start b43;
        subprocess s44 {
        start b44;
        subprocess s45 {
        start b45;
        subprocess s46 {
        start b46;
        subprocess s47 {
        start b47;
        subprocess s48 {
        start b48;
        subprocess s49 {
        start b49;
        subprocess s50 {
        start b50;
        subprocess s51 {
        start b51;
        subprocess s52 {
        start b52;
        subprocess s53 {
        start b53;
        subprocess s54 {
        start b54;
        subprocess s55 {
        start b55;
        subprocess s56 {
        start b56;
        subprocess s57 {
        start b57;
        subprocess s58 {
        start b58;
        subprocess s59 {
        start b59;
        subprocess s60 {
        start b60;
        subprocess s61 {
        start b61;
        subprocess s62 {
        start b62;
        subprocess s63 {
        start b63;
        subprocess s64 {
        start b64;
        subprocess s65 {
        start b65;
        end e65;
        b65 -> e65;
        }
        end e64;
        b64 -> s65 -> e64;
        }
        end e63;
        b63 -> s64 -> e63;
        }
        end e62;
        b62 -> s63 -> e62;
        }
        end e61;
        b61 -> s62 -> e61;
        }
        end e60;
        b60 -> s61 -> e60;
        }
        end e59;
        b59 -> s60 -> e59;
        }
        end e58;
        b58 -> s59 -> e58;
        }
        end e57;
        b57 -> s58 -> e57;
        }
        end e56;
        b56 -> s57 -> e56;
        }
        end e55;
        b55 -> s56 -> e55;
        }
        end e54;
        b54 -> s55 -> e54;
        }
        end e53;
        b53 -> s54 -> e53;
        }
        end e52;
        b52 -> s53 -> e52;
        }
        end e51;
        b51 -> s52 -> e51;
        }
        end e50;
        b50 -> s51 -> e50;
        }
        end e49;
        b49 -> s50 -> e49;
        }
        end e48;
        b48 -> s49 -> e48;
        }
        end e47;
        b47 -> s48 -> e47;
        }
        end e46;
        b46 -> s47 -> e46;
        }
        end e45;
        b45 -> s46 -> e45;
        }
        end e44;
        b44 -> s45 -> e44;
        }
        end e43;
        b43 -> s44 -> e43;
        }
        end e42;
        b42 -> s43 -> e42;
        }
        end e41;
        b41 -> s42 -> e41;
        }
        end e40;
        b40 -> s41 -> e40;
        }
        end e39;
        b39 -> s40 -> e39;
        }
        end e38;
        b38 -> s39 -> e38;
        }
        end e37;
        b37 -> s38 -> e37;
        }
        end e36;
        b36 -> s37 -> e36;
        }
        end e35;
        b35 -> s36 -> e35;
        }
        end e34;
        b34 -> s35 -> e34;
        }
        end e33;
        b33 -> s34 -> e33;
        }
        end e32;
        b32 -> s33 -> e32;
        }
        end e31;
        b31 -> s32 -> e31;
        }
        end e30;
        b30 -> s31 -> e30;
        }
        end e29;
        b29 -> s30 -> e29;
        }
        end e28;
        b28 -> s29 -> e28;
        }
        end e27;
        b27 -> s28 -> e27;
        }
        end e26;
        b26 -> s27 -> e26;
        }
        end e25;
        b25 -> s26 -> e25;
        }
        end e24;
        b24 -> s25 -> e24;
        }
        end e23;
        b23 -> s24 -> e23;
        }
        end e22;
        b22 -> s23 -> e22;
        }
        end e21;
        b21 -> s22 -> e21;
        }
        end e20;
        b20 -> s21 -> e20;
        }
        end e19;
        b19 -> s20 -> e19;
        }
        end e18;
        b18 -> s19 -> e18;
        }
        end e17;
        b17 -> s18 -> e17;
        }
        end e16;
        b16 -> s17 -> e16;
        }
        end e15;
        b15 -> s16 -> e15;
        }
        end e14;
        b14 -> s15 -> e14;
        }
        end e13;
        b13 -> s14 -> e13;
        }
        end e12;
        b12 -> s13 -> e12;
        }
        end e11;
        b11 -> s12 -> e11;
        }
        end e10;
        b10 -> s11 -> e10;
        }
        end e9;
        b9 -> s10 -> e9;
        }
        end e8;
        b8 -> s9 -> e8;
        }
        end e7;
        b7 -> s8 -> e7;
        }
        end e6;
        b6 -> s7 -> e6;
        }
        end e5;
        b5 -> s6 -> e5;
        }
        end e4;
        b4 -> s5 -> e4;
        }
        end e3;
        b3 -> s4 -> e3;
        }
        end e2;
        b2 -> s3 -> e2;
        }
        end e1;
        b1 -> s2 -> e1;
        }
        end e;
        b -> s1 -> e;
    }
}

fn main() {}
