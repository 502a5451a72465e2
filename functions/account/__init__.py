"""Operations about the caller's own token, in no tenant: who it stands for."""
